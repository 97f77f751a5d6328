"""One task or a folder of tasks: what ``bench tasks check`` and ``bench tasks digest`` run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.errors import UserError

from .capability import RuntimePicker, RuntimeTarget
from .check import CheckReport, check_task
from .digest import task_digest
from .discovery import discover_tasks, is_task_dir


class NoTasksError(UserError):
    """A path that holds no task folders; ``bench tasks digest`` exits 1 on it (contracts §1.9)."""

    exit_code = 1


def _tasks_under(path: Path, error: type[UserError] = UserError) -> list[Path]:
    if not path.exists():
        raise error(f"{path}: no such file or folder; give a task folder or a folder of tasks")
    tasks = discover_tasks(path)
    if not tasks:
        raise error(f"No tasks under {path}: a task folder holds task.md or task.toml")
    return tasks


def check_tasks(path: str | Path, level: str = "structural", runtime: RuntimeTarget | RuntimePicker | None = None,
                allow_task_env: Iterable[str] = ()) -> list[CheckReport]:
    """Check the task at ``path``, or each task in the folder ``path`` (sorted by name).

    Raises:
        UserError: nothing to check.
        ConfigError: a level or sandbox this build cannot check.
    """
    allowed = list(allow_task_env)
    return [check_task(t, level=level, runtime=runtime, allow_task_env=allowed) for t in _tasks_under(Path(path))]


@dataclass
class DigestResult:
    single: bool
    """True when ``path`` was itself a task (print the digest alone)."""
    rows: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One warning per task that could not be read."""


def digest_tasks(path: str | Path) -> DigestResult:
    """Digest the task at ``path`` or every task directly inside it.

    Raises:
        NoTasksError: ``path`` is missing or holds no task.
    """
    root = Path(path)
    tasks = _tasks_under(root, NoTasksError)
    result = DigestResult(single=is_task_dir(root))
    for task in tasks:
        try:
            result.rows.append((task.name, task_digest(task)))
        except OSError as exc:
            if result.single:
                raise UserError(f"{task}: cannot be read ({exc.strerror}); check its permissions") from None
            result.skipped.append(f"{task.name}: skipped, cannot be read ({exc.strerror})")
    return result
