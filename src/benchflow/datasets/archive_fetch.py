"""Fetch a task pinned by ``archive_url`` (a ``.tar.gz``, as a BenchFlow Hub serves tasks).

The archive is read from a path, a ``file://`` URL or over http(s) with httpx
(size-capped), and unpacked with tarfile's ``data`` filter: no absolute paths,
no ``..``, no links out of the folder, no device files. Its files are the task,
either at the top or inside one top-level folder.
"""

from __future__ import annotations

from pathlib import Path

from benchflow.errors import DatasetError
from benchflow.util.tarfile_filters import tarfile

MAX_ARCHIVE_BYTES = 2 * 1024**3


def _download(url: str, dest: Path, what: str) -> Path:
    import httpx

    out = dest / "task.tar.gz"
    size = 0
    try:
        with httpx.stream("GET", url, timeout=60.0, follow_redirects=True) as response:
            response.raise_for_status()
            with out.open("wb") as handle:
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > MAX_ARCHIVE_BYTES:
                        raise DatasetError(f"{what}: archive is over {MAX_ARCHIVE_BYTES // 1024**3} GiB")
                    handle.write(chunk)
    except httpx.HTTPError as exc:
        raise DatasetError(f"{what}: cannot fetch {url} ({exc})") from None
    return out


def unpack_archive(url: str, work: Path, what: str) -> Path:
    """Download (or open) ``url`` and unpack it under ``work``; returns the task's folder.

    Raises:
        DatasetError: unreachable, not a tar.gz, or holding unsafe members.
    """
    if url.startswith(("http://", "https://")):
        archive = _download(url, work, what)
    else:
        archive = Path(url.removeprefix("file://")).expanduser()
        if not archive.is_file():
            raise DatasetError(f"{what}: archive {archive} not found")
    tree = work / "tree"
    tree.mkdir()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(tree, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise DatasetError(f"{what}: {url} is not a readable tar.gz of the task ({exc})") from None
    entries = list(tree.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return tree
