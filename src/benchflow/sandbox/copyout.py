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

Symlinks are created last: until every folder and file is written no path in
the staging folder passes through a link, so a member named ``link/x`` can
never write outside it. Then links whose real path leaves the copied folder
are removed until none is left (removing one can change where another leads).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

CHUNK = 1 << 20
ENTRY_COST = 512
"""Bytes charged to the copy budget per entry on the host path (a tar header on the engine path)."""
MAX_LISTED = 50
"""Drops and cuts listed by name in a report; the counts are always complete."""


@dataclass(frozen=True)
class CopyLimits:
    """How much one copy-out may bring back."""

    file_bytes: int = 100 << 20
    """Bytes kept of one file; the rest is cut (the head is kept)."""
    total_bytes: int = 1 << 30
    """Bytes read from the sandbox for one copy; the copy stops there."""
    entries: int = 200_000
    """Files, folders and links written for one copy; the copy stops there."""


DEFAULT_LIMITS = CopyLimits()


@dataclass
class CopyReport:
    """What a copy-out brought back, and what it left behind and why."""

    files: int = 0
    bytes: int = 0
    dropped: list[dict[str, str]] = field(default_factory=list)
    """``{"path", "reason"}`` of the first :data:`MAX_LISTED` entries left out."""
    n_dropped: int = 0
    cut: list[dict[str, Any]] = field(default_factory=list)
    """``{"path", "size", "kept"}`` of the first :data:`MAX_LISTED` files cut short."""
    n_cut: int = 0
    stopped: str | None = None
    """Why the copy ended before the end of the folder (a cap), or None."""

    @property
    def clean(self) -> bool:
        return not (self.n_dropped or self.n_cut or self.stopped)

    def drop(self, path: str, reason: str) -> None:
        self.n_dropped += 1
        if len(self.dropped) < MAX_LISTED:
            self.dropped.append({"path": _shown(path), "reason": reason})

    def cut_short(self, path: str, size: int, kept: int) -> None:
        self.n_cut += 1
        if len(self.cut) < MAX_LISTED:
            self.cut.append({"path": _shown(path), "size": size, "kept": kept})

    def note(self) -> dict[str, Any] | None:
        """The JSON block a result file records, or None when nothing was left out."""
        if self.clean:
            return None
        return {"files": self.files, "bytes": self.bytes, "n_dropped": self.n_dropped, "dropped": self.dropped,
                "n_cut": self.n_cut, "cut": self.cut, "stopped": self.stopped}


def _shown(path: str) -> str:
    return path if len(path) <= 200 else path[:197] + "..."


class _Stop(Exception):
    """A copy cap was reached; the message says which."""


class _Writer:
    """Writes entries under ``dest`` (which does not exist yet) following the module's rules."""

    def __init__(self, dest: Path, limits: CopyLimits, report: CopyReport) -> None:
        self.dest, self.limits, self.report = dest, limits, report
        self.links: list[tuple[str, str]] = []
        self.written: set[str] = set()
        self.entries = 0

    def _count(self) -> None:
        self.entries += 1
        if self.entries > self.limits.entries:
            raise _Stop(f"more than {self.limits.entries} entries; the rest was not copied")

    def _path(self, rel: str) -> Path | None:
        """Where ``rel`` goes, its parent folders made; None (and a drop) when it cannot go anywhere safe."""
        parts = PurePosixPath(rel).parts
        if rel.startswith("/") or ".." in parts:
            self.report.drop(rel, "name leaves the copied folder")
            return None
        path = self.dest
        for name in parts[:-1]:
            path = path / name
            try:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    self.report.drop(rel, "a parent folder is not a folder")
                    return None
            except FileNotFoundError:
                _mkdir(path)
        return self.dest.joinpath(*parts)

    def _free(self, rel: str) -> Path | None:
        """The path for a new entry ``rel``; None (and a drop) when the name is taken."""
        path = self._path(rel)
        if path is not None and os.path.lexists(path):
            self.report.drop(rel, "name copied twice; the first kept")
            return None
        return path

    def folder(self, rel: str) -> None:
        self._count()
        path = self._path(rel)
        if path is None:
            return
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                return  # already made as a parent
            self.report.drop(rel, "name copied twice; the first kept")
        except FileNotFoundError:
            _mkdir(path)

    def file(self, rel: str, source: Any, size: int, mode: int, mtime: float | None) -> None:
        """Write up to the per-file cap of ``source`` (anything with ``read(n)``) as ``rel``."""
        self._count()
        path = self._free(rel)
        if path is None:
            return
        keep = min(size, self.limits.file_bytes)
        copied = 0
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            while copied < keep:
                data = source.read(min(CHUNK, keep - copied))
                if not data:
                    break
                os.write(fd, data)  # a regular file on a local disk: one write takes it all
                copied += len(data)
        except _Stop:
            self.report.cut_short(rel, size, copied)
            raise
        finally:
            os.fchmod(fd, 0o755 if mode & stat.S_IXUSR else 0o644)
            if mtime is not None:
                os.utime(fd, (mtime, mtime))
            os.close(fd)
            self.report.files += 1
            self.report.bytes += copied
            self.written.add(rel)
        if copied < size:
            self.report.cut_short(rel, size, copied)

    def hardlink(self, rel: str, target: str) -> None:
        if target not in self.written:
            self.report.drop(rel, "hard link to a file that was not copied")
            return
        self._count()
        path = self._free(rel)
        if path is not None:
            os.link(self.dest.joinpath(*PurePosixPath(target).parts), path, follow_symlinks=False)

    def symlink(self, rel: str, target: str) -> None:
        """Queue a link; :meth:`finish` makes it if it stays inside."""
        lexical = os.path.normpath(os.path.join(os.path.dirname(rel), target)) if target else ""
        if not rel:
            self.report.drop(rel, "the copied path is itself a symbolic link")
        elif not target or target.startswith("/"):
            self.report.drop(rel, "absolute or empty symbolic link")
        elif lexical == ".." or lexical.startswith("../"):
            self.report.drop(rel, "symbolic link leads outside the copied folder")
        else:
            self._count()
            self.links.append((rel, target))

    def special(self, rel: str, what: str) -> None:
        self.report.drop(rel, f"{what}: only files, folders and links are copied out")

    def finish(self) -> None:
        """Create the queued links, then remove those whose real path leaves ``dest`` until none does."""
        made: list[tuple[str, Path]] = []
        for rel, target in self.links:
            path = self._free(rel)
            if path is not None:
                os.symlink(target, path)
                made.append((rel, path))
        root = os.path.realpath(self.dest)
        changed = True
        while changed:
            changed = False
            for rel, path in list(made):
                real = os.path.realpath(path)
                if real != root and not real.startswith(root + os.sep):
                    os.unlink(path)
                    made.remove((rel, path))
                    self.report.drop(rel, "symbolic link leads outside the copied folder")
                    changed = True


def _mkdir(path: Path) -> None:
    os.mkdir(path, 0o755)
    os.chmod(path, 0o755, follow_symlinks=False)


# -- the engine path: a tar stream ------------------------------------------------------------


class _Budgeted:
    """A file-like view of byte chunks that stops the copy once ``limit`` bytes were read."""

    def __init__(self, chunks: Iterable[bytes], limit: int) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._view = memoryview(b"")
        self.limit, self.count = limit, 0

    def read(self, size: int = -1) -> bytes:
        if self.count >= self.limit:
            raise _Stop(f"read {self.limit} bytes from the sandbox (the per-copy cap); the rest was not copied")
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
        writer = _Writer(dest, limits, report)
        try:
            with tarfile.open(fileobj=source, mode="r|") as archive:  # type: ignore[call-overload]
                while (member := archive.next()) is not None:
                    archive.members.clear()  # a stream never looks back; keep memory flat
                    _add_member(writer, archive, member, top)
        except _Stop as stop:
            report.stopped = str(stop)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        writer.finish()
    return report


def _relative(name: str, top: str) -> str | None:
    parts = PurePosixPath(name).parts
    if not parts or parts[0] != top:
        return None
    return PurePosixPath(*parts[1:]).as_posix() if len(parts) > 1 else ""


def _add_member(writer: _Writer, archive: tarfile.TarFile, member: tarfile.TarInfo, top: str) -> None:
    rel = _relative(member.name, top)
    if rel is None:
        writer.report.drop(member.name, "outside the copied folder")
        return
    try:
        _write_member(writer, archive, member, rel, top)
    except OSError as exc:
        writer.report.drop(rel, f"cannot be written here ({exc.strerror})")


def _write_member(writer: _Writer, archive: tarfile.TarFile, member: tarfile.TarInfo, rel: str, top: str) -> None:
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
            raise _Stop(f"read {limits.total_bytes} bytes from the sandbox (the per-copy cap); "
                        "the rest was not copied")

    with _staging(Path(local)) as dest:
        writer = _Writer(dest, limits, report)
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
        except _Stop as stop:
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


def _host_entry(writer: _Writer, dir_fd: int | None, name: str, rel: str, charge: Any) -> None:
    try:
        _copy_host_entry(writer, dir_fd, name, rel, charge)
    except FileNotFoundError:
        pass  # removed by the sandbox while we walked
    except OSError as exc:
        writer.report.drop(rel, f"cannot be copied ({exc.strerror})")


def _copy_host_entry(writer: _Writer, dir_fd: int | None, name: str, rel: str, charge: Any) -> None:
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
