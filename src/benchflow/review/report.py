"""``review_report.json``: one review of one rollout, judged from the reviewer's rollout folder.

The answer is the file the reviewer wrote (``agent/review.json``, copied out of
its ``/logs/agent``) or, when it wrote none, its final message. An answer is judged
even when the reviewer's rollout then ended in error (kept as
``reviewer_rollout_error``). A reviewer with no answer (timeout, crash) or an
answer the rubric does not accept is ``status: reviewer_error`` with the raw
answer kept; it never scores 0.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.records import TrialResult, Unreadable, read_record
from benchflow.util import nofollow

from .answer import MalformedAnswer, parse_answer
from .rubric import Rubric
from .scoring import aggregate

KIND = "benchflow.review-report"
SCHEMA_VERSION = 1
REPORT_NAME = "review_report.json"
ANSWER_FILE = "review.json"
MAX_ANSWER_BYTES = 1 << 20
MAX_RAW_KEPT = 20_000


def read_answer(reviewer: TrialPaths) -> tuple[str | None, str | None]:
    """(the answer text, where it came from: ``file`` or ``final_message``); (None, None) when none."""
    try:
        raw = nofollow.read_bytes(reviewer.agent_dir / ANSWER_FILE, root=reviewer.root, limit=MAX_ANSWER_BYTES)
        return raw.decode("utf-8", "replace"), "file"
    except FileNotFoundError:
        pass
    except OSError:
        return None, None
    from benchflow.results.trajectory import read_all

    messages = [e for e in read_all(reviewer.root) if e.get("type") == "agent_message"]
    if messages and isinstance(messages[-1].get("text"), str) and messages[-1]["text"].strip():
        return messages[-1]["text"], "final_message"
    return None, None


def _reviewer_result(reviewer: TrialPaths) -> tuple[TrialResult | None, str | None]:
    try:
        return read_record(TrialResult, reviewer.result, name=reviewer.name), None
    except Unreadable as exc:
        return None, str(exc)


def judge(reviewer: TrialPaths | None, rubric: Rubric, reward: float | None) -> dict[str, Any]:
    """The outcome of one reviewer rollout: verdicts, quality and decision, or a reviewer error."""
    if reviewer is None:
        return {"status": "reviewer_error", "error": {"category": "reviewer_not_run",
                                                      "message": "the reviewer rollout did not run"}}
    result, unreadable = _reviewer_result(reviewer)
    if result is None:
        return {"status": "reviewer_error", "error": {"category": "reviewer_not_run",
                                                      "message": unreadable or "the reviewer rollout never finished"}}
    raw, source = read_answer(reviewer)
    out: dict[str, Any] = {"answer_source": source}
    if result.error:  # the answer, when there is one, is still judged: a verdict written before a stop counts
        out["reviewer_rollout_error"] = {"category": result.error_category or "other", "message": result.error}
    if raw is None:
        error = out.get("reviewer_rollout_error") or {
            "category": "no_answer", "message": f"the reviewer wrote no {ANSWER_FILE} and ended with no message"}
        return {**out, "status": "reviewer_error", "error": error}
    try:
        verdicts = parse_answer(raw, rubric)
    except MalformedAnswer as exc:
        return {**out, "status": "reviewer_error", "raw_answer": _clip(exc.raw),
                "error": {"category": "malformed_answer", "message": exc.reason}}
    quality = aggregate(verdicts, reward)
    return {**out, "status": "completed", "criteria": [v.record() for v in verdicts], **quality.record()}


def _clip(raw: str | None) -> str | None:
    return raw if raw is None or len(raw) <= MAX_RAW_KEPT else raw[:MAX_RAW_KEPT] + "\n[...cut]"


def build_report(*, reviewed: dict[str, Any], rubric: Rubric, reviewer: dict[str, Any], evidence: dict[str, Any],
                 outcome: dict[str, Any], reviewer_trial: Path | None) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "kind": KIND, "reviewed": reviewed, "rubric": rubric.record(),
            "reviewer": {**reviewer, "trial": os.fspath(reviewer_trial) if reviewer_trial else None},
            "evidence": evidence, **outcome,
            "reviewed_at": dt.datetime.now(dt.timezone.utc).isoformat()}
