"""A persisted rollout (one trial folder, ours or Harbor's) read for a monitor to score again.

The trajectory is the trial's agent events (``trajectory/acp_trajectory.jsonl``), else its recorded
model calls (``trajectory/llm_trajectory.jsonl``), else its ATIF trajectory (``agent/trajectory.json``,
a Harbor trial). What the trial's own verifier said (``result.json``) rides along as the verdict's
``eval`` block, to put the production score beside the eval one. The trial folder is only read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import UserError
from benchflow.jobs.layout import JobPaths, TrialPaths

from .transcript import Transcript, read_file


@dataclass
class Replayed:
    transcript: Transcript
    trajectory_file: Path
    trial: str
    task_name: str | None = None
    task_digest: str | None = None
    evaluated: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def trajectory_file(trial: TrialPaths) -> Path | None:
    for path in (trial.acp_trajectory, trial.llm_trajectory, trial.atif_trajectory):
        if path.is_file() and path.stat().st_size:
            return path
    return None


def read_trial(path: Path) -> Replayed:
    """The rollout of the trial folder at ``path``.

    Raises:
        UserError: not a trial folder, or one that kept no trajectory this reads.
    """
    from benchflow.records import read_optional
    from benchflow.records.trial import TrialResult

    if not path.exists():
        raise UserError(f"{path}: no such folder; give a trial folder (<job>/<task>__<id>)")
    if not path.is_dir():
        raise UserError(f"{path}: not a folder; give a trial folder, or use 'bench monitor run' for a trajectory file")
    trial = TrialPaths(path)
    if not (trial.result.is_file() or trial.config.is_file()):
        if JobPaths.is_job(path):
            raise UserError(f"{path}: a job folder; give one of its trial folders (<task>__<id>)")
        raise UserError(f"{path}: not a trial folder (no result.json or config.json); give <job>/<task>__<id>")
    found = trajectory_file(trial)
    if found is None:
        raise UserError(f"{path}: the trial kept no trajectory (trajectory/acp_trajectory.jsonl, "
                        "trajectory/llm_trajectory.jsonl or agent/trajectory.json); nothing to score")
    replayed = Replayed(transcript=read_file(found), trajectory_file=found, trial=path.name)
    result = read_optional(TrialResult, trial.result, replayed.notes, name=path.name)
    if result is not None:
        replayed.task_name, replayed.task_digest = result.task_name, result.task_digest
        replayed.evaluated = {"reward": result.reward, "error": result.error, "error_category": result.error_category,
                              "verifier_error": result.verifier_error,
                              "verifier_error_category": result.verifier_error_category}
    return replayed
