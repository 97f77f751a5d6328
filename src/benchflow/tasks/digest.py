"""The task content digest of contracts §1.9, byte for byte.

The digest pins a task's files independent of git: every regular file (no
symlinks, no ``.benchflow-source.json``) keyed by its POSIX relative path in
plain string order, each contributing ``path NUL sha256(content)``. Contents
are streamed in chunks, so a huge file hashes in constant memory.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from benchflow.util.files import sha256_digest

SKIPPED_NAMES = frozenset({".benchflow-source.json"})


def task_files(task_dir: str | Path) -> list[tuple[str, Path]]:
    """(relative POSIX path, absolute path) of every file that enters the digest, sorted by path."""
    root = Path(task_dir)
    out: list[tuple[str, Path]] = []
    for dirpath, _dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            if name in SKIPPED_NAMES:
                continue
            full = Path(dirpath) / name
            try:
                mode = os.lstat(full).st_mode
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(mode):
                continue
            out.append((full.relative_to(root).as_posix(), full))
    out.sort(key=lambda item: item[0])
    return out


def task_digest(task_dir: str | Path) -> str:
    """``"sha256:<hex>"`` over the task's files (see the module docstring)."""
    h = hashlib.sha256()
    for rel, full in task_files(task_dir):
        h.update(rel.encode("utf-8", "surrogateescape"))
        h.update(b"\x00")
        h.update(sha256_digest(full))
    return "sha256:" + h.hexdigest()
