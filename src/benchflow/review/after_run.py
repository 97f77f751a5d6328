"""What a run does after its trials: the integrity audit and the automatic rubric review.

``--integrity audit`` writes each new trial's ``integrity/claim_verdict.json``.
``--reviewer-*`` reviews each new finished trial whose task has ``verifier/rubric.json``
(the run's own task folder, admitted by its digest), in a reviewer job under
``<job>/.review/reviews`` (hidden, so it is not read as trials of the job), and
records the outcome as a scoring revision. Rewards never change.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import JobPaths, TrialPaths
from benchflow.records import TrialResult, Unreadable, read_record

from .integrity import audit_trial
from .revisions import add_revision
from .runner import Target, review_targets
from .settings import ReviewerSettings

REVIEW_JOB = Path(".review") / "reviews"


def has_rubric(task_dir: Path) -> bool:
    return (task_dir / "verifier" / "rubric.json").is_file()


def _target(trial: TrialPaths) -> Target | None:
    try:
        result = read_record(TrialResult, trial.result, name=trial.name)
    except Unreadable:
        return None
    return Target(trial, result) if result is not None else None


async def after_trials(spec: Any, job: JobPaths, results: dict[str, dict[str, Any] | None],
                       tasks: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> None:
    """Audit and review the trials this run finished (``results``: unit key -> result document)."""
    trials = [(key, job.trial(str(doc.get("trial_name") or doc.get("rollout_name"))))
              for key, doc in results.items() if doc and (doc.get("trial_name") or doc.get("rollout_name"))]
    if spec.review.integrity in ("audit", "strict"):
        for key, trial in trials:
            task = tasks.get(key)
            mode = task.config.sandbox.network_mode if task is not None else None
            verdict = audit_trial(trial, network_mode=mode, mode=spec.review.integrity)
            emit({"type": "integrity", "trial": trial.name, "verdict": verdict["verdict"],
                  "flags": verdict["flag_codes"]})
    if spec.review.reviewer is None:
        return
    targets, index = [], {}
    for key, trial in trials:
        task = tasks.get(key)
        if task is None or not has_rubric(Path(task.path)):
            continue
        target = _target(trial)
        if target is not None:
            targets.append(target)
            index[target.result.task_name] = Path(task.path)
    if not targets:
        return
    settings = ReviewerSettings(**spec.review.reviewer)
    if settings.sandbox is None:
        settings.sandbox = spec.sandbox
    reports = await review_targets(targets, settings, out_dir=(job.root / REVIEW_JOB).resolve(), tasks=index)
    for target, report in zip(targets, reports):
        revision = add_revision(target.trial, report, trigger="run")
        emit({"type": "review", "trial": target.trial.name, "status": revision["status"],
              "rubric_reward": revision["rubric_reward"], "decision": revision["decision"]})
