"""The content-addressed task cache: ``<cache>/datasets/tasks/<digest hex>/<task name>/``.

A task enters the cache only as a copy of its regular files (exactly what the
digest covers: no symlinks, no special files) whose digest equals the pinned
one; the folder appears by one rename, so a reader never sees half a task.
Every run digests the cached task again before it starts (``jobs/plan.py``),
so a cache edited by hand is refused, not run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from benchflow.errors import DatasetError
from benchflow.tasks.digest import task_digest, task_files
from benchflow.util.cache_dir import cache_root

from .registry import RegistryTask

_root_override: list[Path] = []


def datasets_root() -> Path:
    return _root_override[-1] if _root_override else cache_root() / "datasets"


@contextlib.contextmanager
def cache_at(root: Path) -> Iterator[None]:
    """Keep fetched tasks under ``root`` instead of the user cache (``bench hub check --cache-dir``)."""
    _root_override.append(root)
    try:
        yield
    finally:
        _root_override.pop()


def task_home(task: RegistryTask) -> Path:
    """Where ``task`` lives in the cache (present or not)."""
    return datasets_root() / "tasks" / task.hex / task.name


def cached(task: RegistryTask) -> Path | None:
    home = task_home(task)
    return home if home.is_dir() else None


def scratch_dir(prefix: str) -> Path:
    """A private temporary folder inside the cache (same filesystem, so results rename into place)."""
    root = datasets_root() / "tmp"
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


def copy_regular_files(src: Path, dest: Path) -> None:
    """Copy the files the digest covers from ``src`` into ``dest`` (symlinks and special files left out)."""
    for rel, full in task_files(src):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(full, target, follow_symlinks=False)
        mode = os.lstat(full).st_mode
        os.chmod(target, 0o755 if mode & stat.S_IXUSR else 0o644)


def inside(path: Path, root: Path) -> bool:
    """``path`` is a real folder under ``root``, reached through no symlink (a fetched tree is hostile)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    node = root
    for part in rel.parts:
        node = node / part
        if node.is_symlink():
            return False
    return path.is_dir()


def drop_symlinks(root: Path) -> None:
    """Remove every symlink under ``root``: what the digest does not cover never reaches a run."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(dirpath) / name
            if full.is_symlink():
                full.unlink()


def place(task: RegistryTask, src: Path, where: str, root: Path) -> Path:
    """Copy ``src`` (a folder under the fetched tree ``root``) into the cache as ``task`` after checking its digest.

    Raises:
        DatasetError: ``src`` is missing or outside ``root``, or its content does not match the pinned
            digest (names the task).
    """
    if not inside(src, root):
        raise DatasetError(f"task {task.name}: not found at {where}; the registry entry points at nothing")
    tmp = scratch_dir(f"{task.hex[:12]}-")
    try:
        copy = tmp / task.name
        copy.mkdir()
        copy_regular_files(src, copy)
        found = task_digest(copy)
        if found != task.digest:
            raise DatasetError(f"task {task.name}: content digest {found} does not match the registry's "
                               f"{task.digest} ({where}); refusing to run a task that is not the pinned one")
        home = task_home(task)
        home.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(copy, home)
        except OSError:
            if not home.is_dir():  # another run placed it first: theirs is the same content
                raise
        return home
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
