"""The writer behind :mod:`.copyout`: one set of rules for every entry a sandbox sends back.

Symlinks are created last: until every folder and file is written no path in
the staging folder passes through a link, so a member named ``link/x`` can
never write outside it. Then links whose real path leaves the copied folder
are removed until none is left (removing one can change where another leads).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

CHUNK = 1 << 20
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


class Stop(Exception):
    """A copy cap was reached; the message says which. Not a BenchError: a control-flow signal, caught by
    each copy-out to record what was left out."""


class Writer:
    """Writes entries under ``dest`` (which does not exist yet) following the module's rules."""

    def __init__(self, dest: Path, limits: CopyLimits, report: CopyReport) -> None:
        self.dest, self.limits, self.report = dest, limits, report
        self.links: list[tuple[str, str]] = []
        self.written: set[str] = set()
        self.entries = 0

    def _count(self) -> None:
        self.entries += 1
        if self.entries > self.limits.entries:
            raise Stop(f"more than {self.limits.entries} entries; the rest was not copied")

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
        except Stop:
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
