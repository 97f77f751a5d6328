"""Tar streams for copying files and folders into a sandbox.

Packing keeps modes and symlinks (links are stored as links, never followed)
and writes into a spooled temporary file, so a large file is streamed from
disk rather than held in memory. Copying out is :mod:`.copyout`'s job.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import IO

SPOOL_BYTES = 8 << 20


def spool() -> IO[bytes]:
    """A temporary binary file that stays in memory up to a few MB."""
    return tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - caller closes


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def pack(local: Path, remote: str) -> IO[bytes]:
    """A tar of ``local`` (file or folder) whose single top entry is ``remote`` relative to ``/``.

    Extracted at ``/``, it recreates ``local`` at ``remote``; the engine makes
    missing parent folders.
    """
    return pack_many([(local, remote)])


def pack_many(items: Iterable[tuple[Path, str]]) -> IO[bytes]:
    """One tar of several (``local``, ``remote``) pairs, each as :func:`pack` makes it: one upload
    round trip instead of one per pair."""
    items, names = list(items), []
    for _, remote in items:
        name = PurePosixPath(remote)
        if not name.is_absolute() or ".." in name.parts or str(name) == "/":
            raise ValueError(f"remote path must be absolute, without '..', and not '/': {remote!r}")
        names.append(str(name).lstrip("/"))
    buffer = spool()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for (local, _), name in zip(items, names):
            archive.add(str(local), arcname=name, recursive=True, filter=_root_owned)
    buffer.seek(0)
    return buffer


def pack_members(members: Iterable[tuple[str, bytes, int]]) -> bytes:
    """A small in-memory tar of (path relative to /, content, mode) files."""
    buffer = spool()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, data, mode in members:
            info = _root_owned(tarfile.TarInfo(path.lstrip("/")))
            info.size, info.mode = len(data), mode
            archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer.read()
