"""Copy-out: what leaves a sandbox for the job folder is made safe on the way.

Whatever a backend copies out (an engine's tar stream, or a host folder the
sandbox wrote) passes through one writer, so every backend keeps the same rules:

- only folders, regular files, hard links to files already copied, and
  symlinks that resolve inside the copied folder are kept; devices, FIFOs,
  sockets, absolute links and links that lead out are dropped;
- modes are fixed: folders 0755, files 0644 (0755 when the owner could run it,
  so a frozen workspace still runs after ``bench regrade``); no set-uid,
  set-gid or sticky bit; owners are the caller's;
- a per-file cap keeps the head of a larger file, and a per-copy cap on the
  bytes read from the sandbox (plus a cap on entries) stops the copy.

Every drop, cut and stop is written to the returned :class:`CopyReport`.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .copyout_writer import CopyLimits, CopyReport, Stop, Writer

__all__ = ["DEFAULT_LIMITS", "CopyLimits", "CopyReport", "copy_out_tar", "copy_out_tar_split", "copy_out_tree"]

ENTRY_COST = 512
"""Bytes charged to the copy budget per entry on the host path (a tar header on the engine path)."""
DEFAULT_LIMITS = CopyLimits()


# -- the engine path: a tar stream ------------------------------------------------------------


class _Budgeted:
    """A file-like view of byte chunks that stops the copy once ``limit`` bytes were read."""

    def __init__(self, chunks: Iterable[bytes], limit: int) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._view = memoryview(b"")
        self.limit, self.count = limit, 0

    def read(self, size: int = -1) -> bytes:
        if self.count >= self.limit:
            raise Stop(f"read {self.limit} bytes from the sandbox (the per-copy cap); the rest was not copied")
        if not self._view:
            chunk = next(self._chunks, b"")
            if not chunk:
                return b""
            self._view = memoryview(chunk)
        size = len(self._view) if size is None or size < 0 else size
        size = min(size, len(self._view), self.limit - self.count)
        data, self._view = bytes(self._view[:size]), self._view[size:]
        self.count += len(data)
        return data


def copy_out_tar(chunks: Iterable[bytes], top: str, local: Path, limits: CopyLimits | None = None) -> CopyReport:
    """Extract an engine archive whose top entry is ``top`` so that it ends up at ``local``, safely.

    ``local`` is replaced when it is a file or merged into when it is a folder.
    The archive is read as a stream (never spooled whole).
    """
    limits = limits or DEFAULT_LIMITS
    report = CopyReport()
    source = _Budgeted(chunks, limits.total_bytes)
    with _staging(Path(local)) as dest:
        writer = Writer(dest, limits, report)
        try:
            with tarfile.open(fileobj=source, mode="r|") as archive:  # type: ignore[call-overload]
                while (member := archive.next()) is not None:
                    archive.members.clear()  # a stream never looks back; keep memory flat
                    _add_member(writer, archive, member, top)
        except Stop as stop:
            report.stopped = str(stop)
        finally:
            _close(chunks)
        writer.finish()
    return report


def _relative(name: str, top: str) -> str | None:
    """``name`` relative to ``top`` (one or more leading components), or None when it is not under it."""
    parts, head = PurePosixPath(name).parts, PurePosixPath(top).parts
    if len(parts) < len(head) or parts[:len(head)] != head:
        return None
    return PurePosixPath(*parts[len(head):]).as_posix() if len(parts) > len(head) else ""


def _add_member(writer: Writer, archive: tarfile.TarFile, member: tarfile.TarInfo, top: str) -> None:
    rel = _relative(member.name, top)
    if rel is None:
        writer.report.drop(member.name, "outside the copied folder")
        return
    try:
        _write_member(writer, archive, member, rel, top)
    except OSError as exc:
        writer.report.drop(rel, f"cannot be written here ({exc.strerror})")


def _write_member(writer: Writer, archive: tarfile.TarFile, member: tarfile.TarInfo, rel: str, top: str) -> None:
    if member.isdir():
        writer.folder(rel)
    elif member.isreg():
        handle = archive.extractfile(member)
        assert handle is not None
        writer.file(rel, handle, member.size, member.mode, member.mtime)
    elif member.issym():
        writer.symlink(rel, member.linkname)
    elif member.islnk():
        target = _relative(member.linkname, top)
        if target is None:
            writer.report.drop(rel, "hard link to a file outside the copied folder")
        else:
            writer.hardlink(rel, target)
    else:
        kind = "device" if member.ischr() or member.isblk() else "FIFO" if member.isfifo() else "special file"
        writer.special(rel, kind)


class _Unsplittable(Exception):
    """The archive is not one :func:`copy_out_tar_split` can take apart; nothing was moved into place.
    Not a BenchError: a control-flow signal to copy child by child."""


def copy_out_tar_split(chunks: Iterable[bytes], top: str, folders: dict[str, Path],
                       limits: CopyLimits | None = None) -> dict[str, CopyReport | None] | None:
    """Extract an engine archive of a folder ``top`` into one local folder per child named in
    ``folders`` (child name -> local path), each as :func:`copy_out_tar` of that child alone would.

    One archive read instead of one per child (each costs the engine a mount of the container's file
    system). The child name's report, or None for a child that is not there. Other children are
    read past and left out. None (nothing moved into place) when the archive is not a plain one: the
    top or a named child is not a folder, a hard link leads out of its child (an archive of that child
    alone would hold the file itself), or it holds more than one copy's cap of bytes (what is left out
    counts too) — the caller then copies each child by itself.
    """
    limits = limits or DEFAULT_LIMITS
    source = _Budgeted(chunks, limits.total_bytes)
    reports: dict[str, CopyReport | None] = dict.fromkeys(folders)
    writers: dict[str, Writer] = {}
    try:
        with ExitStack() as stagings:
            with tarfile.open(fileobj=source, mode="r|") as archive:  # type: ignore[call-overload]
                while (member := archive.next()) is not None:
                    archive.members.clear()
                    rel = _relative(member.name, top)
                    if rel is None or rel == "":
                        if rel == "" and not member.isdir():
                            raise _Unsplittable
                        continue
                    name, _, inner = rel.partition("/")
                    if name not in folders:
                        continue
                    writer = writers.get(name)
                    if writer is None:
                        if inner or not member.isdir():
                            raise _Unsplittable
                        report = reports[name] = CopyReport()
                        writer = writers[name] = Writer(stagings.enter_context(_staging(folders[name])), limits,
                                                        report)
                    if member.islnk() and _relative(member.linkname, f"{top}/{name}") is None \
                            and _relative(member.linkname, top) is not None:
                        raise _Unsplittable  # its file came under another child: alone, this child would hold it
                    if writer.report.stopped is None:
                        try:
                            _add_member(writer, archive, member, f"{top}/{name}")
                        except Stop as stop:
                            if source.count >= source.limit:
                                raise _Unsplittable from None  # the read cap, not this child's entry cap
                            writer.report.stopped = str(stop)
            for writer in writers.values():
                writer.finish()
    except (_Unsplittable, Stop):  # a Stop here is the read cap: copied child by child, each has its own
        return None
    finally:
        _close(chunks)
    return reports


def _close(chunks: Iterable[bytes]) -> None:
    """End the engine's stream (a generator over its connection), read to its end or not."""
    close = getattr(chunks, "close", None)
    if close is not None:
        close()


# -- the host path: a folder the sandbox wrote ---------------------------------------------------


def copy_out_tree(source: Path, local: Path, limits: CopyLimits | None = None) -> CopyReport:
    """Copy ``source`` (a host path the sandbox could write) to ``local`` under the same rules.

    No symlink in ``source`` is followed: folders are walked by descriptor
    (``os.fwalk``) and every file is opened with ``O_NOFOLLOW`` and checked to
    be a regular file after opening, so the sandbox cannot swap a file for a
    link or a FIFO between the look and the read.
    """
    limits = limits or DEFAULT_LIMITS
    report = CopyReport()
    spent = [0]

    def charge(n: int) -> None:
        spent[0] += n
        if spent[0] > limits.total_bytes:
            raise Stop(f"read {limits.total_bytes} bytes from the sandbox (the per-copy cap); "
                        "the rest was not copied")

    with _staging(Path(local)) as dest:
        writer = Writer(dest, limits, report)
        try:
            top = os.lstat(source)
            if stat.S_ISDIR(top.st_mode):
                writer.folder("")
                # fwalk lists links to folders among the folders but never descends into them
                for folder, dirs, names, dir_fd in os.fwalk(source, follow_symlinks=False):
                    rel = Path(folder).relative_to(source).as_posix()
                    for name in dirs + names:
                        charge(ENTRY_COST)
                        _host_entry(writer, dir_fd, name, name if rel == "." else f"{rel}/{name}", charge)
            else:
                _host_entry(writer, None, str(source), "", charge)
        except Stop as stop:
            report.stopped = str(stop)
        except RecursionError:
            report.stopped = "folders nested too deep to walk; the rest was not copied"
        writer.finish()
    return report


class _Charged:
    def __init__(self, handle: IO[bytes], charge: Any) -> None:
        self.handle, self.charge = handle, charge

    def read(self, size: int) -> bytes:
        data = self.handle.read(size)
        self.charge(len(data))
        return data


def _host_entry(writer: Writer, dir_fd: int | None, name: str, rel: str, charge: Any) -> None:
    try:
        _copy_host_entry(writer, dir_fd, name, rel, charge)
    except FileNotFoundError:
        pass  # removed by the sandbox while we walked
    except OSError as exc:
        writer.report.drop(rel, f"cannot be copied ({exc.strerror})")


def _copy_host_entry(writer: Writer, dir_fd: int | None, name: str, rel: str, charge: Any) -> None:
    info = os.lstat(name, dir_fd=dir_fd)
    if stat.S_ISDIR(info.st_mode):
        writer.folder(rel)
        return
    if stat.S_ISLNK(info.st_mode):
        writer.symlink(rel, os.readlink(name, dir_fd=dir_fd))
        return
    if not stat.S_ISREG(info.st_mode):
        kind = ("device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else
                "FIFO" if stat.S_ISFIFO(info.st_mode) else "socket" if stat.S_ISSOCK(info.st_mode) else
                "special file")
        writer.special(rel, kind)
        return
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        writer.report.drop(rel, "changed while it was copied")
        return
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            writer.report.drop(rel, "changed while it was copied")
            return
        writer.file(rel, _Charged(handle, charge), opened.st_size, opened.st_mode, opened.st_mtime)


# -- staging and moving into place -----------------------------------------------------------


@contextmanager
def _staging(local: Path) -> Iterator[Path]:
    """A fresh path beside ``local``, moved to ``local`` on success.

    It has ``local``'s own name, so a kept link that climbs out and back in by
    name (``../<name>/x``) still lands inside after the move.
    """
    local.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=local.parent, prefix=".bf-get-") as staging:
        dest = Path(staging) / local.name
        yield dest
        if os.path.lexists(dest):
            _move_into_place(dest, local)


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
