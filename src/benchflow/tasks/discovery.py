"""Telling a task folder from a folder of tasks (contracts §1.1)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from benchflow.util.match import select


def is_task_dir(path: str | Path) -> bool:
    """A folder is a task when it holds a regular file ``task.md`` or ``task.toml``."""
    path = Path(path)
    return (path / "task.md").is_file() or (path / "task.toml").is_file()


def _child_tasks(path: Path) -> list[Path]:
    if not path.is_dir():
        return []
    return sorted((c for c in path.iterdir() if c.is_dir() and is_task_dir(c)), key=lambda c: c.name)


def resolve_collection_root(path: str | Path) -> Path:
    """``path`` itself when it is a task or holds tasks; else ``path/tasks`` when that holds tasks."""
    path = Path(path)
    if is_task_dir(path) or _child_tasks(path):
        return path
    nested = path / "tasks"
    return nested if _child_tasks(nested) else path


def discover_tasks(root: str | Path, include: Iterable[str] | str | None = None,
                   exclude: Iterable[str] | str | None = None) -> list[Path]:
    """The task folders under ``root`` (sorted by name), filtered by name or glob.

    A task folder given directly yields itself (still subject to the filters).
    """
    root = Path(root)
    tasks = [root] if is_task_dir(root) else _child_tasks(resolve_collection_root(root))
    by_name = {t.name: t for t in tasks}
    if len(by_name) != len(tasks):  # only possible for a single task dir
        return tasks
    return [by_name[n] for n in select(list(by_name), include, exclude)]
