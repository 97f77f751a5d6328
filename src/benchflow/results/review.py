"""A trial's rubric review and integrity verdict, as ``bench results``, ``bench eval inspect`` and ``bench view`` show them.

The review comes from ``result.json``'s ``scoring`` block (the current scoring
revision); the verdict from ``integrity/claim_verdict.json``. Both are shown
beside the verifier's reward, which they never change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.records import TrialResult


def revisions(trial: TrialPaths) -> list[tuple[int, Path]]:
    """(attempt, file) of every scoring revision (``<trial>/scoring/<attempt>.json``), oldest first."""
    folder = trial.scoring_dir
    if not folder.is_dir():
        return []
    found = [(int(p.stem), p) for p in folder.glob("*.json") if p.stem.isdigit()]
    return sorted(found)


def latest(trial: TrialPaths) -> dict[str, Any] | None:
    """The current (newest) scoring revision's document, or None (none, or unreadable)."""
    found = revisions(trial)
    if not found:
        return None
    try:
        data = json.loads(found[-1][1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def review_of(result: TrialResult | None) -> dict[str, Any] | None:
    """``{current, attempt, status, rubric_reward, decision}`` of the current scoring revision, or None."""
    if result is None or result.scoring is None:
        return None
    return result.scoring.model_dump(mode="json", include={"current", "attempt", "status", "rubric_reward",
                                                           "decision"})


def _verdict(trial: TrialPaths) -> dict[str, Any] | None:
    """The claim verdict document, or None (none written, unreadable, or no clean/flagged verdict)."""
    try:
        data = json.loads(trial.claim_verdict.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("verdict") not in ("clean", "flagged"):
        return None
    return data


def integrity_of(trial: TrialPaths, data: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``{verdict, mode, flag_codes}`` of the trial's claim verdict (``data`` when already read), or None."""
    data = data if data is not None else _verdict(trial)
    if data is None:
        return None
    codes = data.get("flag_codes")
    return {"verdict": data["verdict"], "mode": data.get("mode"),
            "flag_codes": [str(c) for c in codes] if isinstance(codes, list) else []}


def review_text(review: dict[str, Any] | None) -> str:
    """``publishable 0.85``, ``reviewer_error``, or ``""``."""
    if not review:
        return ""
    if review.get("status") != "completed":
        return str(review.get("status") or "reviewer_error")
    reward = review.get("rubric_reward")
    return f"{review.get('decision')} {reward:.2f}" if isinstance(reward, (int, float)) else str(review.get("decision"))


def integrity_text(integrity: dict[str, Any] | None) -> str:
    """``clean``, ``flagged: read_tests, wrote_reward``, or ``""``."""
    if not integrity:
        return ""
    if integrity["verdict"] == "flagged" and integrity["flag_codes"]:
        return "flagged: " + ", ".join(integrity["flag_codes"])
    return integrity["verdict"]


def cell(review: dict[str, Any] | None, integrity: dict[str, Any] | None) -> str:
    """One table cell: the review, then the integrity verdict."""
    return " · ".join(part for part in (review_text(review), integrity_text(integrity)) if part)


def review_detail(trial: TrialPaths) -> dict[str, Any] | None:
    """What ``bench view`` shows of the review: the current revision's verdicts, and the integrity flags.

    ``{"review": {status, decision, rubric_reward, raw_quality, gated_quality, gates, criteria, error, attempt},
    "integrity": {verdict, mode, flags}}`` (either may be None); None when the trial has neither."""
    revision = latest(trial)
    review = None if revision is None else {k: revision.get(k) for k in (
        "attempt", "status", "decision", "rubric_reward", "raw_quality", "gated_quality", "verifier_reward",
        "gates", "criteria", "error")}
    verdict = _verdict(trial)
    integrity = integrity_of(trial, verdict)
    if verdict is not None and integrity is not None:
        flags = verdict.get("flags") if isinstance(verdict.get("flags"), list) else []
        integrity["flags"] = [{k: f.get(k) for k in ("code", "message", "command")} for f in flags
                              if isinstance(f, dict)]
    if review is None and integrity is None:
        return None
    return {"review": review, "integrity": integrity}
