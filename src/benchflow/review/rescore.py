"""``bench eval score PATH``: retry a trial's rubric review on its saved workspace and trajectory.

The reviewer is the one the latest revision recorded, changed by ``--reviewer-*``.
The task comes only from the trusted ``--tasks-root`` and must have the digest the
trial recorded. A completed scoring is left alone unless ``--force``; each retry is
a new revision (``scoring/<attempt>.json``) that ``result.json`` then names.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError, JobFolderError
from benchflow.jobs.layout import TrialPaths
from benchflow.results.review import latest

from .after_run import has_rubric
from .revisions import add_revision
from .runner import review_targets, select_targets, task_index
from .settings import from_record


def _trusted_task(tasks_root: Path, task_name: str, digest: str | None) -> Path:
    from benchflow.tasks.digest import task_digest

    index = task_index(tasks_root) or {}
    task = index.get(task_name)
    if task is None:
        raise ConfigError(f"--tasks-root {tasks_root}: no task folder named {task_name}; give the trusted folder "
                          "holding the trial's task")
    if not digest or task_digest(task) != digest:
        raise ConfigError(f"{task}: its digest is not the one the trial recorded ({digest}); give the task "
                          "folder the trial ran")
    if not has_rubric(task):
        raise ConfigError(f"{task}: no verifier/rubric.json, so the trial has no rubric to score against")
    return task


async def score_async(path: Path, *, tasks_root: Path, force: bool = False,
                      changes: dict[str, Any] | None = None) -> dict[str, Any]:
    path = path.expanduser()
    if not TrialPaths(path).result.is_file():
        raise JobFolderError(f"{path}: not a finished rollout folder (no result.json); give one trial folder")
    target = select_targets(path)[0]
    trial = target.trial
    current = latest(trial)
    if current is not None and current.get("status") == "completed" and not force:
        return {"status": "already_scored", "revision": current, "exit_code": 0}
    task = _trusted_task(tasks_root.expanduser(), target.result.task_name, target.result.task_digest)
    settings = from_record(current.get("reviewer") if current else None).updated(**(changes or {}))
    out_dir = (trial.root.parent / ".review" / f"score-{dt.datetime.now():%Y-%m-%d__%H-%M-%S-%f}").resolve()
    report = (await review_targets([target], settings, out_dir=out_dir,
                                   tasks={target.result.task_name: task}))[0]
    revision = add_revision(trial, report, trigger="eval score")
    return {"status": revision["status"], "revision": revision,
            "exit_code": 0 if revision["status"] == "completed" else 1}


def score(path: Path, **options: Any) -> dict[str, Any]:
    """Retry the rubric review of the trial at ``path`` (see the module docstring).

    Raises:
        JobFolderError: ``path`` is not a finished rollout folder.
        ConfigError: the task is not under ``tasks_root`` with the recorded digest, or has no rubric.
    """
    return asyncio.run(score_async(path, **options))
