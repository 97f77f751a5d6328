"""The content-addressed task cache: ``<cache>/datasets/tasks/<digest hex>/<task name>/``.

A task enters the cache only as a copy of its regular files (exactly what the
digest covers: no symlinks, no special files) whose digest equals the pinned
one; the folder appears by one rename, so a reader never sees half a task.
Every run digests the cached task again before it starts (``jobs/plan.py``),
so a cache edited by hand is refused, not run.

A task its registry pins by commit but not by digest (a Harbor entry) enters
under the digest of what was fetched, and ``pins/`` remembers which digest a
``(git_url, commit, path)`` gave, so a later run finds it with no git.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from benchflow.errors import DatasetError
from benchflow.tasks.digest import task_digest, task_files
from benchflow.util import atomic
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
    """Copy ``src`` (a folder under the fetched tree ``root``) into the cache as ``task`` after checking its digest
    (a task with no digest enters under the digest of its copy; the returned folder's parent names it).

    Raises:
        DatasetError: ``src`` is missing or outside ``root``, or its content does not match the pinned
            digest (names the task).
    """
    if not inside(src, root):
        raise DatasetError(f"task {task.name}: not found at {where}; the registry entry points at nothing")
    tmp = scratch_dir("place-")
    try:
        copy = tmp / task.name
        copy.mkdir()
        copy_regular_files(src, copy)
        found = task_digest(copy)
        if task.digest is not None and found != task.digest:
            raise DatasetError(f"task {task.name}: content digest {found} does not match the registry's "
                               f"{task.digest} ({where}); refusing to run a task that is not the pinned one")
        home = task_home(task.model_copy(update={"digest": found}))
        home.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.rename(copy, home)
        except OSError:
            if not home.is_dir():  # another run placed it first: theirs is the same content
                raise
        return home
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _pin_file(git_url: str, commit: str, path: str) -> Path:
    key = hashlib.sha256(f"{git_url}\n{commit}\n{path}".encode()).hexdigest()[:32]
    return datasets_root() / "pins" / f"{key}.json"


def pinned_digest(git_url: str, commit: str, path: str) -> str | None:
    """The digest ``path`` of ``git_url`` at ``commit`` gave when it was fetched, or None (not fetched yet)."""
    try:
        data = json.loads(_pin_file(git_url, commit, path).read_text())
    except (OSError, ValueError):
        return None
    digest = data.get("digest") if isinstance(data, dict) else None
    return digest if isinstance(digest, str) and digest.startswith("sha256:") else None


def record_pin(git_url: str, commit: str, path: str, digest: str) -> None:
    atomic.write_json(_pin_file(git_url, commit, path),
                      {"git_url": git_url, "git_commit_id": commit, "path": path, "digest": digest})
