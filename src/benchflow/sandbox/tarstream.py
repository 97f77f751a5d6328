"""Tar streams for copying files and folders in and out of a sandbox.

Packing keeps modes and symlinks (links are stored as links, never followed)
and writes into a spooled temporary file, so a large file is streamed from
disk rather than held in memory. Unpacking refuses members that would land
outside the destination (absolute names, ``..``, paths through a symlink) and
keeps modes except set-uid/set-gid bits; ownership is not copied.
"""

from __future__ import annotations

import io
import os
import shutil
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
    name = PurePosixPath(remote)
    if not name.is_absolute() or ".." in name.parts or str(name) == "/":
        raise ValueError(f"remote path must be absolute, without '..', and not '/': {remote!r}")
    buffer = spool()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.add(str(local), arcname=str(name).lstrip("/"), recursive=True, filter=_root_owned)
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


def _safe(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """tarfile's ``tar`` filter checks, but modes are kept (minus set-id bits) and owners dropped."""
    checked = tarfile.tar_filter(member, dest)
    if member.ischr() or member.isblk():
        raise tarfile.SpecialFileError(member)
    if member.islnk():
        root = os.path.realpath(dest)
        target = os.path.realpath(os.path.join(root, member.linkname))
        if os.path.commonpath([target, root]) != root:
            raise tarfile.LinkOutsideDestinationError(member, target)
    return checked.replace(mode=(member.mode & 0o1777) if member.mode is not None else None,
                           uid=None, gid=None, uname=None, gname=None, deep=False)


def unpack(chunks: Iterable[bytes], top: str, local: Path) -> None:
    """Extract an engine archive whose top entry is ``top`` so that it ends up at ``local``.

    ``local`` is replaced when it exists (file) or merged into (folder).
    """
    local = Path(local)
    local.parent.mkdir(parents=True, exist_ok=True)
    buffer = spool()
    try:
        for chunk in chunks:
            buffer.write(chunk)
        buffer.seek(0)
        with tempfile.TemporaryDirectory(dir=local.parent, prefix=".bf-get-") as staging:
            with tarfile.open(fileobj=buffer, mode="r|") as archive:
                archive.extractall(staging, filter=_safe)
            _move_into_place(Path(staging) / top, local)
    finally:
        buffer.close()


def _move_into_place(source: Path, target: Path) -> None:
    if source.is_dir() and not source.is_symlink():
        if target.is_dir() and not target.is_symlink():
            for child in source.iterdir():
                _move_into_place(child, target / child.name)
            return
        if target.exists() or target.is_symlink():
            _remove(target)
        os.replace(source, target)
        return
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    os.replace(source, target)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
