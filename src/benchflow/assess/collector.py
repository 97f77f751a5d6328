"""The collector's side of an assessment: its assignment and its vote, read-only.

The collector store (docs/collector-store.md) is opened with a ``mode=ro``
URI through :mod:`benchflow.collector.store`; nothing here writes to it. Its
outputs are matched to attempts A and B by the trial folder (or the output
path) each attempt reference recorded; the vote's ``left``/``right`` are as
shown, so they are turned into A/B terms here (``left`` = A in the log). A
skip becomes ``abstain``. The collector's code folder is hashed into the event
so the log names the exact tool that showed the pair.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from benchflow.assess import AssessmentError
from benchflow.assess.digest import hash_path
from benchflow.assess.log import Sidecar, read_events
from benchflow.assess.reducer import fold


def _code_digest(code: Path) -> str:
    if not code.is_dir():
        raise AssessmentError(f"--collector-code {code}: not a folder; give the collector's code folder")
    return hash_path(code)["sha256"]


def _open(db: Path) -> sqlite3.Connection:
    from benchflow.collector.store import open_readonly

    if not db.is_file():
        raise AssessmentError(f"--collector-db {db}: no such file; give the collector's workspace.sqlite3")
    return open_readonly(db)


def _same(a: str | None, b: str) -> bool:
    return bool(a) and Path(a).resolve() == Path(b)  # type: ignore[arg-type]


def _side_of(output: Any, created: dict[str, Any]) -> str | None:
    for side in "AB":
        ref = created["attempts"][side]["ref"]
        if _same(output.trial_path, ref["rollout"]) or _same(output.source_path, ref["output"]["path"]):
            return side
    return None


def _when(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def assignment_payload(sidecar: Path, db: Path, code: Path, assignment_id: str) -> dict[str, Any]:
    """The ``assigned`` event's payload for ``assignment_id``, checked against the assessment."""
    from benchflow.collector import store

    events = read_events(Sidecar(sidecar))
    state = fold(events)
    code_sha256 = _code_digest(code)
    conn = _open(db)
    try:
        assignment = store.get_assignment(conn, assignment_id)
        if assignment is None:
            raise AssessmentError(f"--assignment {assignment_id}: not in {db}")
        pair = store.get_pair(conn, assignment.pair_id)
        shown = [store.get_output(conn, pair.left_output), store.get_output(conn, pair.right_output)] if pair else []
    finally:
        conn.close()
    if pair is None or None in shown:
        raise AssessmentError(f"--assignment {assignment_id}: its pair or outputs are missing from {db}")
    sides = [_side_of(output, state.created) for output in shown]
    if sorted(s or "" for s in sides) != ["A", "B"]:
        raise AssessmentError(f"--assignment {assignment_id}: its outputs are not this assessment's two attempts "
                              f"(matched {sides}); assign the pair made from these two trials")
    if state.released is not None:
        released = next(e for e in events if e["sha256"] == state.released)["payload"]
        last = max((_when(o.get("observed_at")) for o in released["observations"] if _when(o.get("observed_at"))),
                   default=None)
        made = _when(assignment.created_at)
        if last and made and made < last:
            raise AssessmentError(f"--assignment {assignment_id}: persisted at {assignment.created_at}, before the "
                                  "runtimes were observed released; make a new assignment after the release")
    return {"assignment_id": assignment_id, "pair_id": pair.pair_id, "rater_id": assignment.rater_id,
            "rater_kind": assignment.rater_kind, "assigned_at": assignment.created_at,
            "shown": {"left": {"output_id": shown[0].output_id, "attempt": sides[0]},
                      "right": {"output_id": shown[1].output_id, "attempt": sides[1]}},
            "collector": {"code_sha256": code_sha256}}


def vote_payload(sidecar: Path, db: Path, code: Path) -> dict[str, Any]:
    """The ``answered`` event's payload: the collector's one vote on the bound assignment, in A/B terms."""
    from benchflow.collector import store

    state = fold(read_events(Sidecar(sidecar)))
    if state.assigned is None:
        raise AssessmentError("import-vote: no assignment is bound yet; run bench assess assign first")
    code_sha256 = _code_digest(code)
    assignment_id = state.assigned["assignment_id"]
    conn = _open(db)
    try:
        found = store.votes(conn, assignment_id=assignment_id)
    finally:
        conn.close()
    if not found:
        raise AssessmentError(f"import-vote: {db} has no vote on assignment {assignment_id} yet")
    if len(found) > 1:
        raise AssessmentError(f"import-vote: {db} has {len(found)} votes on assignment {assignment_id}; a collector "
                              "records one vote per assignment")
    vote = found[0]
    attempt_of = {entry["output_id"]: entry["attempt"] for entry in state.assigned["shown"].values()}
    if {vote.left_output, vote.right_output} != set(attempt_of):
        raise AssessmentError(f"import-vote: vote {vote.vote_id} is on other outputs than the assignment's pair")
    if vote.choice in ("left", "right"):
        chosen = attempt_of[vote.left_output if vote.choice == "left" else vote.right_output]
        choice = "left" if chosen == "A" else "right"
    else:
        choice = {"tie": "tie", "skip": "abstain"}.get(vote.choice)
        if choice is None:
            raise AssessmentError(f"import-vote: vote {vote.vote_id} has an unknown choice {vote.choice!r}")
    scores: dict[str, dict[str, float]] = {"A": {}, "B": {}}
    for (output_id, aspect), score in sorted(vote.scores.items()):
        if output_id in attempt_of:
            scores[attempt_of[output_id]][aspect] = score
    return {"choice": choice, "reason": vote.reason or "", "tags": [], "actor": vote.rater_id,
            "actor_role": "reviewer", "rater_kind": vote.rater_kind, "scores": scores,
            "vote": {"vote_id": vote.vote_id, "choice_as_shown": vote.choice, "left_output": vote.left_output,
                     "right_output": vote.right_output, "source": vote.source, "shown_at": vote.shown_at,
                     "created_at": vote.created_at},
            "collector": {"code_sha256": code_sha256}}
