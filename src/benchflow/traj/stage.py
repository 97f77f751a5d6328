"""Redact, preview and pack a trajectory capture (the zip the hub keeps).

Every file goes through the project's redactor as ``bench bundle`` uses it
(:func:`benchflow.results.bundle_redact.redact_file`: JSONL records field by
field, secret-named fields masked, secret shapes in text masked). The capture
is ``manifest.json`` + ``trajectory/<name>`` + an optional ``workspace.zip``
(the folder given with ``--workspace-dir``, each file redacted the same way;
left out when the folder is over 1 GiB). Entries carry a fixed timestamp, so
the same redacted content always gives the same capture digest.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.hub.captures import KIND
from benchflow.results.bundle_redact import CHUNK, LeftOut, TooBig, redact_file, spool
from benchflow.util import nofollow

from .identity import Contributor
from .sources import Source

WORKSPACE_LIMIT = 1 << 30
_EPOCH = (1980, 1, 1, 0, 0, 0)
PREVIEW_CHARS = 400


@dataclass
class Capture:
    path: Path
    digest: str
    size: int
    manifest: dict[str, Any]
    preview: list[str] = field(default_factory=list)

    @property
    def masked(self) -> int:
        return self.manifest["redaction"]["masked"]


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def _add_redacted(archive: zipfile.ZipFile, arcname: str, file: Path, root: Path,
                  left_out: list[dict[str, str]]) -> dict[str, Any] | None:
    """Redact ``file`` into ``archive`` as ``arcname``; its manifest entry, or None when it was left out."""
    with spool() as out:
        try:
            _redacted, masked = redact_file(file.name, lambda: nofollow.open_file(file, root), out, left_out, arcname)
        except (TooBig, LeftOut, nofollow.UnsafeFile) as exc:
            left_out.append({"path": arcname, "reason": str(exc) or "not a regular file"})
            return None
        out.seek(0)
        digest, size, lines = hashlib.sha256(), 0, 0
        with archive.open(_info(arcname), "w", force_zip64=True) as member:
            while chunk := out.read(CHUNK):
                digest.update(chunk)
                lines += chunk.count(b"\n")
                member.write(chunk)
                size += len(chunk)
    return {"path": arcname, "sha256": digest.hexdigest(), "size": size, "lines": lines, "masked": masked}


def _preview(archive: zipfile.ZipFile, names: list[str], steps: int) -> list[str]:
    shown: list[str] = []
    for name in names:
        with archive.open(name) as handle:
            for raw in io.TextIOWrapper(handle, encoding="utf-8", errors="replace"):
                if len(shown) >= steps:
                    return shown
                if raw.strip():
                    line = raw.rstrip("\n")
                    shown.append(line if len(line) <= PREVIEW_CHARS else line[:PREVIEW_CHARS] + " …")
    return shown


def _folder_size(folder: Path) -> int:
    total = 0
    for current, _dirs, names in os.walk(folder):
        for name in names:
            try:
                stat = os.lstat(Path(current) / name)
            except OSError:
                continue
            total += stat.st_size
            if total > WORKSPACE_LIMIT:
                return total
    return total


def _workspace_zip(folder: Path, dest: Path, left_out: list[dict[str, str]]) -> tuple[Path | None, dict[str, Any]]:
    size = _folder_size(folder)
    if size > WORKSPACE_LIMIT:
        return None, {"included": False, "reason": f"{folder.name} is over {WORKSPACE_LIMIT >> 30} GiB; skipped"}
    out = dest / "workspace.zip"
    files = 0
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for current, dirs, names in os.walk(folder):
            dirs.sort()
            for name in sorted(names):
                file = Path(current) / name
                if file.is_symlink() or not file.is_file():
                    continue
                rel = file.relative_to(folder).as_posix()
                if _add_redacted(archive, rel, file, folder, left_out) is not None:
                    files += 1
    return out, {"included": True, "files": files, "source_size": size}


def stage(sources: list[Source], who: Contributor, dest: Path, *, preview_steps: int,
          workspace_dir: Path | None) -> Capture:
    """Write the capture zip into ``dest`` and describe it."""
    left_out: list[dict[str, str]] = []
    entries: list[dict[str, Any]] = []
    fd, tmp_name = tempfile.mkstemp(prefix="capture-", suffix=".zip", dir=dest)
    os.close(fd)
    tmp = Path(tmp_name)
    workspace = {"included": False, "reason": "no --workspace-dir given"}
    with zipfile.ZipFile(tmp, "w") as archive:
        for source in sources:
            entry = _add_redacted(archive, f"trajectory/{source.name}", source.path, source.path.parent, left_out)
            if entry is not None:
                entries.append(entry)
        preview = _preview(archive, [e["path"] for e in entries], preview_steps)
        if workspace_dir is not None:
            ws_zip, workspace = _workspace_zip(workspace_dir, dest, left_out)
            if ws_zip is not None:
                with archive.open(_info("workspace.zip"), "w", force_zip64=True) as member, ws_zip.open("rb") as src:
                    digest = hashlib.sha256()
                    while chunk := src.read(CHUNK):
                        digest.update(chunk)
                        member.write(chunk)
                entries.append({"path": "workspace.zip", "sha256": digest.hexdigest(), "size": ws_zip.stat().st_size})
                ws_zip.unlink()
        manifest = {
            "kind": KIND, "schema_version": 1,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "contributor": who.as_dict(), "files": entries, "workspace": workspace, "left_out": left_out,
            "redaction": {"masked": sum(e.get("masked", 0) for e in entries)},
        }
        manifest_info = _info("manifest.json")
        archive.writestr(manifest_info, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    data_digest = hashlib.sha256()
    with tmp.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            data_digest.update(chunk)
    final = dest / f"{data_digest.hexdigest()}.zip"
    os.replace(tmp, final)
    return Capture(path=final, digest="sha256:" + data_digest.hexdigest(), size=final.stat().st_size,
                   manifest=manifest, preview=preview)
