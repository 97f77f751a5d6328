"""``bench regrade --review``: rerun each regraded trial's rubric review, gated by the new test.

The reviewer is the one the trial's current scoring revision recorded (else the
default reviewer), changed by ``--reviewer-*``. It sees the trial's saved
outputs (records, trajectory, frozen workspace) and the current task (the one
the regrade ran, admitted by its digest), and is told the regraded reward, so
the gates use the new test. The outcome is compared with the current revision's
rubric reward (the combined score: raw quality when the tests and blockers
pass, else 0) and kept in the trial's ``regrade.json`` ``review`` block and
the summary row; ``result.json`` and ``scoring/`` are never changed.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.records import TrialResult
from benchflow.results.regrade_trial import Candidate
from benchflow.util import atomic

REVIEW_JOB = Path(".review")


def _before(trial: TrialPaths) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the recorded reviewer, the current revision's combined score) of ``trial``."""
    from benchflow.results.review import latest

    current = latest(trial)
    if current is None:
        return None, {"attempt": None, "status": None, "rubric_reward": None, "decision": None}
    return current.get("reviewer"), {k: current.get(k) for k in ("attempt", "status", "rubric_reward", "decision")}


def _after(report: dict[str, Any]) -> dict[str, Any]:
    keep = ("status", "rubric_reward", "raw_quality", "gated_quality", "decision", "gates", "criteria", "error")
    out = {k: report.get(k) for k in keep}
    if out["status"] != "completed":
        out["rubric_reward"] = None
    return out


def _changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    a, b = before.get("rubric_reward"), after.get("rubric_reward")
    if a is None or b is None:
        return (a is None) != (b is None) or before.get("decision") != after.get("decision")
    return abs(a - b) > 1e-9 or before.get("decision") != after.get("decision")


async def review_regraded(job_root: Path, pairs: list[tuple[Candidate, dict[str, Any]]],
                          changes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Review each (candidate, regrade document); trial name -> its ``review`` block (also added to regrade.json)."""
    from .after_run import has_rubric
    from .runner import Target, review_targets
    from .settings import from_record

    blocks: dict[str, dict[str, Any]] = {}
    groups: dict[str, tuple[Any, list[tuple[Candidate, Target, dict[str, Any]]]]] = {}
    for candidate, document in pairs:
        reviewer, before = _before(candidate.paths)
        task_dir = Path(candidate.task.path)
        if not has_rubric(task_dir):
            blocks[candidate.paths.name] = {"status": "skipped", "before": before, "changed": False,
                                            "reason": f"{task_dir}: no verifier/rubric.json in the current task"}
            continue
        settings = from_record(reviewer).updated(**changes)
        if settings.sandbox is None:
            settings.sandbox = candidate.backend
        # the regraded reward gates the review; the current task is admitted by its own digest
        result = TrialResult.model_validate({**candidate.result, "rewards": document.get("rewards"),
                                             "task_digest": candidate.digest})
        key = json.dumps(settings.record(), sort_keys=True, default=str)
        groups.setdefault(key, (settings, []))[1].append((candidate, Target(candidate.paths, result), before))
    stamp = f"{dt.datetime.now():%Y-%m-%d__%H-%M-%S-%f}"
    for n, (settings, items) in enumerate(groups.values()):
        out_dir = (job_root / REVIEW_JOB / f"regrade-{stamp}-{n}").resolve()
        index = {c.task_name: Path(c.task.path) for c, _, _ in items}
        reports = await review_targets([t for _, t, _ in items], settings, out_dir=out_dir, tasks=index)
        for (candidate, _, before), report in zip(items, reports):
            after = _after(report)
            blocks[candidate.paths.name] = {
                "status": after["status"], "before": before, "after": after, "changed": _changed(before, after),
                "verifier_reward": report["reviewed"]["reward"], "reviewer": report["reviewer"],
                "rubric": report["rubric"]}
    for candidate, _ in pairs:
        _add_to_regrade(candidate.paths, blocks[candidate.paths.name])
    return blocks


def _add_to_regrade(trial: TrialPaths, block: dict[str, Any]) -> None:
    """Put the review block into the trial's ``regrade.json`` (written by the regrade just before)."""
    try:
        document = json.loads(trial.regrade.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(document, dict):
        document["review"] = block
        atomic.write_json(trial.regrade, document)


def row_review(block: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the summary row keeps of a review block."""
    if block is None:
        return None
    after = block.get("after") or {}
    return {"status": block["status"], "changed": block["changed"], "reason": block.get("reason"),
            "before": block["before"], "after": {k: after.get(k) for k in ("rubric_reward", "decision")}
            if after else None, "error": (after.get("error") or {}).get("category") if after else None}


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    reviews = [r["review"] for r in rows if r.get("review")]
    return {"reviewed": sum(1 for r in reviews if r["status"] == "completed"),
            "review_errored": sum(1 for r in reviews if r["status"] == "reviewer_error"),
            "review_skipped": sum(1 for r in reviews if r["status"] == "skipped"),
            "review_changed": sum(1 for r in reviews if r["changed"])}


async def after_regrade(job_root: Path, pairs: list[tuple[Candidate, dict[str, Any]]], changes: dict[str, Any],
                        rows: list[dict[str, Any]]) -> dict[str, int]:
    """Review the regraded trials, put each summary row's ``review``; the summary's review counts."""
    blocks = await review_regraded(job_root, pairs, changes)
    for row in rows:
        row["review"] = row_review(blocks.get(row["trial"]))
    return counts(rows)
