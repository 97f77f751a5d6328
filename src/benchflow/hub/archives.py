"""A task folder as a tar.gz, and the digest of what an archive holds.

The client packs exactly the files the task digest covers
(:func:`benchflow.tasks.digest.task_files`), in digest order, with fixed
owners and times, so the same folder always gives the same bytes. The hub
treats an archive as hostile: only regular files and folders with relative
paths, bounded in count and size, are unpacked (tarfile's ``data`` filter) into
a scratch folder, and the digest is recomputed there with the same
:func:`benchflow.tasks.digest.task_digest` that ``bench tasks digest`` uses.
"""

from __future__ import annotations

from benchflow.errors import UserError
import gzip
import os
import tempfile
from pathlib import Path
from typing import IO

from benchflow.tasks.digest import task_digest, task_files
from benchflow.util.tarfile_filters import tarfile

MAX_MEMBERS = 20_000
MAX_UNPACKED_BYTES = 1 << 30


class BadArchive(UserError):
    """An uploaded archive that is not a plain tar.gz of a task folder."""


def pack(task_dir: Path, out: IO[bytes]) -> None:
    """Write ``task_dir`` as a reproducible tar.gz to ``out``."""
    with gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, full in task_files(task_dir):
            info = tarfile.TarInfo(rel)
            stat = os.lstat(full)
            info.size = stat.st_size
            info.mode = 0o755 if stat.st_mode & 0o111 else 0o644
            info.mtime = 0
            with full.open("rb") as handle:
                tar.addfile(info, handle)


def _check_members(tar: tarfile.TarFile) -> None:
    total = 0
    for count, member in enumerate(tar, start=1):
        if count > MAX_MEMBERS:
            raise BadArchive(f"more than {MAX_MEMBERS} entries")
        name = member.name
        if name.startswith("/") or ".." in Path(name).parts:
            raise BadArchive(f"entry {name!r} points outside the task folder")
        if not (member.isfile() or member.isdir()):
            raise BadArchive(f"entry {name!r} is not a regular file or folder")
        total += member.size
        if total > MAX_UNPACKED_BYTES:
            raise BadArchive(f"unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB")


def archive_digest(path: Path, scratch: Path | None = None) -> str:
    """The task digest of the folder the tar.gz at ``path`` unpacks to.

    Raises:
        BadArchive: not a tar.gz, or an entry that is not a plain file/folder inside the task.
    """
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            _check_members(tar)
        with tempfile.TemporaryDirectory(prefix="hub-task-", dir=scratch) as tmp:
            with tarfile.open(path, mode="r:gz") as tar:
                tar.extractall(tmp, filter="data")
            return task_digest(tmp)
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as exc:
        raise BadArchive(f"not a readable tar.gz ({exc})") from exc
