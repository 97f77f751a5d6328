"""What an export reads from a job or trial folder, through the project's readers.

``config.json`` and ``result.json`` are read as :mod:`benchflow.records` models, the outcome through
:func:`benchflow.results.reader.summarize` (the one that ``bench eval inspect`` uses), and the trajectory
through :mod:`benchflow.results.trajectory`. A trial that has not finished (no ``result.json``) is not
exported: its trajectory may still grow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import JobFolderError
from benchflow.jobs.layout import JobPaths, TrialPaths
from benchflow.records import EvaluationRecord, TrialConfig, TrialResult, Unreadable, read_json, read_optional
from benchflow.results.documents import TrialSummary
from benchflow.results.reader import is_job_dir, is_trial_dir, require_dir, summarize
from benchflow.results.trajectory import read_all

from .turns import Turn, turns_of


@dataclass
class TrialSource:
    """One finished trial as the converters see it."""

    paths: TrialPaths
    result: TrialResult
    config: TrialConfig | None
    summary: TrialSummary
    prompts: list[str]
    turns: list[Turn]
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.paths.name

    @property
    def model(self) -> str | None:
        return self.result.model or (self.config.model if self.config else None)

    @property
    def agent(self) -> str:
        return self.result.agent_name or self.result.agent or (self.config.agent if self.config else None) or "unknown"


@dataclass
class JobSource:
    """A job folder (or one trial, read as a job of one) and the trials an export takes from it."""

    root: Path
    is_job: bool
    trials: list[TrialSource]
    evaluation: EvaluationRecord | None
    left_out: list[dict[str, str]]
    """Trial folders not exported, each ``{"path", "reason"}``."""


def read_trial(paths: TrialPaths, job: str | None = None) -> TrialSource | None:
    """The trial, or ``None`` when it has not finished (no readable ``result.json``)."""
    notes: list[str] = []
    result = read_optional(TrialResult, paths.result, notes, name=paths.name)
    if result is None:
        return None
    config = read_optional(TrialConfig, paths.config, notes, name=paths.name)
    prompts: Any = None
    if paths.prompts.is_file():
        prompts = _optional_json(paths.prompts, notes)
    return TrialSource(paths=paths, result=result, config=config,
                       summary=summarize(paths, result, config, job, notes),
                       prompts=[p for p in prompts if isinstance(p, str)] if isinstance(prompts, list) else [],
                       turns=turns_of(read_all(paths.root, "acp")), notes=notes)


def _optional_json(path: Path, notes: list[str]) -> Any:
    try:
        return read_json(path)
    except Unreadable as exc:
        notes.append(str(exc))
        return None


def read_source(path: str | Path) -> JobSource:
    """A job folder's finished trials, or one trial folder's.

    Raises:
        JobFolderError: ``path`` is neither a job nor a trial folder, or the trial has not finished (exit 2).
    """
    root = Path(path)
    require_dir(root, "a job folder or a trial folder")
    if is_trial_dir(root):
        trial = read_trial(TrialPaths(root), root.parent.name)
        if trial is None:
            raise JobFolderError(f"{root}: the trial has not finished (no readable result.json); nothing to export")
        return JobSource(root=root, is_job=False, trials=[trial], evaluation=None, left_out=[])
    if not is_job_dir(root):
        raise JobFolderError(f"{root}: not a job or trial folder; give one job folder or one trial in it")
    jobs = JobPaths(root)
    trials: list[TrialSource] = []
    left_out: list[dict[str, str]] = []
    for paths in jobs.trials():
        trial = read_trial(paths, jobs.name)
        if trial is None:
            left_out.append({"path": paths.name, "reason": "not finished (no readable result.json)"})
        else:
            trials.append(trial)
    return JobSource(root=root, is_job=True, trials=trials, left_out=left_out,
                     evaluation=read_optional(EvaluationRecord, jobs.evaluation, []))
