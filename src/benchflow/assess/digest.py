"""Hashes the assessment log relies on: canonical JSON, one file, one folder tree.

A folder's digest covers every entry's relative path, kind and content; links
are hashed as their target text and never followed (an attempt's output was
written by an agent and may point anywhere).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from benchflow.util.atomic import dumps_json
from benchflow.util.files import sha256_hex


def canonical(obj: Any) -> bytes:
    """The one byte rendering that is hashed: sorted keys, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_json(obj: Any) -> str:
    return hashlib.sha256(canonical(obj)).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_path(path: Path) -> dict[str, Any]:
    """``{kind, sha256, files, bytes}`` of one file or a whole folder (links not followed)."""
    info = os.lstat(path)
    if stat.S_ISREG(info.st_mode):
        return {"kind": "file", "sha256": sha256_hex(path), "files": 1, "bytes": info.st_size}
    if not stat.S_ISDIR(info.st_mode):
        raise ValueError(f"{path} is neither a regular file nor a folder")
    digest = hashlib.sha256()
    files = size = 0
    for entry in sorted(_walk(path)):
        rel = entry.relative_to(path).as_posix()
        mode = os.lstat(entry).st_mode
        if stat.S_ISLNK(mode):
            digest.update(b"L\0" + rel.encode() + b"\0" + os.readlink(entry).encode() + b"\0")
        elif stat.S_ISDIR(mode):
            digest.update(b"D\0" + rel.encode() + b"\0")
        elif stat.S_ISREG(mode):
            digest.update(b"F\0" + rel.encode() + b"\0" + sha256_hex(entry).encode() + b"\0")
            files += 1
            size += os.lstat(entry).st_size
        else:  # FIFOs, sockets, devices: named, never opened
            digest.update(b"O\0" + rel.encode() + b"\0")
    return {"kind": "folder", "sha256": digest.hexdigest(), "files": files, "bytes": size}


def _walk(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        found.extend(base / name for name in dirnames)
        found.extend(base / name for name in filenames)
    return found


def write_new_json(path: Path, obj: Any) -> None:
    """Write ``obj`` to ``path`` only if no file is there; complete or absent, never half written.

    Raises:
        FileExistsError: ``path`` already exists (it is left untouched).
    """
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(dumps_json(obj))
        os.chmod(tmp, 0o644)
        os.link(tmp, path)
    finally:
        os.unlink(tmp)
