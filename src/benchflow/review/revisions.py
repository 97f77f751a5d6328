"""Scoring revisions: ``<trial>/scoring/<attempt>.json``, and ``result.json`` naming the current one.

Every automatic review (``bench run --reviewer-*``, ``bench eval score``) adds a
revision; none is ever rewritten. ``result.json`` gets a ``scoring`` block naming
the current revision with its rubric reward (the gated quality when the tests and
blockers pass, else 0; null when the reviewer failed), beside the verifier's
reward, which is never replaced.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.results.review import revisions
from benchflow.util import atomic

KIND = "benchflow.scoring-revision"


def add_revision(trial: TrialPaths, report: dict[str, Any], *, trigger: str) -> dict[str, Any]:
    """Write the next revision from a review report and point ``result.json`` at it."""
    attempt = (revisions(trial)[-1][0] + 1) if revisions(trial) else 1
    completed = report["status"] == "completed"
    revision = {
        "schema_version": 1, "kind": KIND, "attempt": attempt, "trigger": trigger, "status": report["status"],
        "verifier_reward": report["reviewed"]["reward"],
        "rubric_reward": report.get("rubric_reward") if completed else None,
        "raw_quality": report.get("raw_quality"), "gated_quality": report.get("gated_quality"),
        "decision": report.get("decision"), "gates": report.get("gates"), "criteria": report.get("criteria"),
        "error": report.get("error"), "raw_answer": report.get("raw_answer"), "rubric": report["rubric"],
        "reviewer": report["reviewer"], "created_at": dt.datetime.now(dt.timezone.utc).isoformat(),
    }
    path = trial.scoring_revision(attempt)
    relative = path.relative_to(trial.root).as_posix()
    atomic.write_json(path, revision)
    _point_result(trial, relative, revision)
    return revision


def _point_result(trial: TrialPaths, relative: str, revision: dict[str, Any]) -> None:
    """``result.json``'s ``scoring`` block names the current revision; nothing else in it changes."""
    try:
        result = json.loads(trial.result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(result, dict):
        return
    result["scoring"] = {"current": relative, "attempt": revision["attempt"], "status": revision["status"],
                         "rubric_reward": revision["rubric_reward"], "decision": revision["decision"]}
    atomic.write_json(trial.result, result)
