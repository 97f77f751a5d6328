"""Opening files a sandbox may have written, without following symbolic links.

Copy-out (:mod:`benchflow.sandbox.copyout`) keeps no link that leads out of a
job folder, but a folder written by an older version, unpacked from someone
else's archive or edited by hand may still hold one, and a reader that follows
it serves a host file as if the agent had written it. Readers of job folders
open files here instead: ``O_NOFOLLOW`` on the file (and on every folder below
``root`` when one is given), a regular-file check after opening (a FIFO would
block the reader; a device would feed it forever) and an optional size bound.
Refusals are :class:`UnsafeFile`, an ``OSError``, so callers that already
treat an unreadable file as missing or as a note keep doing so.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import BinaryIO

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFile(OSError):
    """A path that is a symbolic link, a special file, or larger than the reader allows. Not a BenchError:
    an OSError, so every reader's ``except OSError`` treats it as an unreadable file."""


def open_file(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> BinaryIO:
    """Open a regular file for reading in binary mode, following no link.

    Without ``root`` only the last component must not be a link; with ``root``
    (a trusted folder ``path`` lies under) no folder between them may be one
    either.

    Raises:
        FileNotFoundError: nothing is there.
        UnsafeFile: a link, a special file, or ``path`` outside ``root``.
    """
    path = Path(path)
    fd = _open_under(path, Path(root)) if root is not None else _open_last(None, str(path), path)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None,
               limit: int | None = None) -> bytes:
    """The whole file (see :func:`open_file`); ``UnsafeFile`` when it holds more than ``limit`` bytes."""
    with open_file(path, root) as handle:
        if limit is None:
            return handle.read()
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise UnsafeFile(errno.EFBIG, f"larger than {limit} bytes", str(path))
    return data


def is_regular(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` itself (not what a link points at) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _open_under(path: Path, root: Path) -> int:
    try:
        rel = PurePosixPath(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        raise UnsafeFile(errno.EXDEV, f"not inside {root}", str(path)) from None
    if not rel.parts or ".." in rel.parts:
        raise UnsafeFile(errno.EINVAL, f"not a file inside {root}", str(path))
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in rel.parts[:-1]:
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafeFile(exc.errno, f"{name} is not a plain folder", str(path)) from None
                raise
            os.close(fd)
            fd = inner
        return _open_last(fd, rel.parts[-1], path)
    finally:
        os.close(fd)


def _open_last(dir_fd: int | None, name: str, path: Path) -> int:
    try:
        return os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(errno.ELOOP, "a symbolic link", str(path)) from None
        raise
