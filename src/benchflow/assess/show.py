"""What ``bench assess show`` and ``label`` print: the state, one line per event, the label."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from benchflow.assess.log import LogBroken, Sidecar, locked, read_events
from benchflow.assess.reducer import RuleBroken, State, fold, label_document
from benchflow.util.atomic import write_json


def label_text(label: Any) -> str:
    return "withheld" if label is None else f"{label:g}"


def summary_line(state: State, *, verified: bool) -> str:
    """``task: label 1 (revision 2, ready) · A=… B=… · released · assigned … · 9 events · verified``."""
    created = state.created or {}
    attempts = created.get("attempts", {})
    doc = label_document(state)
    if doc["revision"] is None:
        label = "label pending"
    else:
        label = f"label {label_text(doc['label'])} (revision {doc['revision']}, {doc['state']})"
    if doc["reduce_due"]:
        label += ", reduce due"
    parts = [
        f"{(created.get('task') or {}).get('name', '?')}: {label}",
        " ".join(f"{side}={attempts[side]['ref'].get('trial_name')}" for side in attempts),
        "released" if state.released else "not released",
        f"assigned {state.assigned['assignment_id']}" if state.assigned else "not assigned",
        f"{state.count} events",
        "verified" if verified else "NOT verified",
    ]
    return " · ".join(parts)


def event_line(event: dict[str, Any]) -> str:
    payload = event["payload"]
    detail = {
        "created": lambda: f"rubric {payload['rubric']['id']}@{payload['rubric']['version']}",
        "released": lambda: f"{len(payload['observations'])} runtimes absent",
        "assigned": lambda: f"assignment {payload['assignment_id']}",
        "answered": lambda: f"choice {payload['choice']} by {payload['actor']}",
        "corrected": lambda: f"choice {payload['choice']} by {payload['actor']} supersedes "
                             f"{payload['supersedes'][:12]}",
        "retracted": lambda: f"target {payload['target'][:12]} by {payload['actor']}",
        "reduced": lambda: f"revision {payload['revision']}: {label_text(payload['label'])} ({payload['state']})",
        "consumed": lambda: f"revision {payload['revision']} by {payload['consumer']}",
        "withdrawn": lambda: f"revision {payload['revision']} ({payload['disposition']})",
    }.get(event["type"], lambda: "")()
    return f"{event['seq']}\t{event['type']}\t{event['sha256']}\t{event['recorded_at']}\t{detail}"


def state_json(state: State | None) -> dict[str, Any]:
    if state is None:
        return {"label": None, "effective_answer": None}
    return {"label": label_document(state), "effective_answer": state.effective,
            "released": state.released is not None,
            "assignment": state.assigned["assignment_id"] if state.assigned else None}


def label_from_log(root: Path, *, write: bool) -> tuple[dict[str, Any], bool, str]:
    """(the log's label, whether the label file equals it, why not); with ``write`` the file is rewritten."""
    from benchflow.assess.verify import label_file_matches

    sidecar = Sidecar(root)
    if not sidecar.events.is_file():
        read_events(sidecar)  # raises: not an assessment sidecar
    with locked(sidecar) if write else contextlib.nullcontext():
        try:
            state = fold(read_events(sidecar))
        except RuleBroken as exc:
            raise LogBroken(f"{sidecar.events}: {exc}") from exc
        doc = label_document(state)
        if write:
            write_json(sidecar.label, doc)
    ok, detail = label_file_matches(sidecar, state)
    return doc, ok, detail


def trial_assessment(trial_dir: Path) -> dict[str, Any] | None:
    """A trial's ``assessment/`` sidecar for ``bench view``: the label rebuilt from the log, whether the log
    verifies, and its summary line; None when the trial has no sidecar."""
    from benchflow.assess.verify import verify

    sidecar = trial_dir / "assessment"
    if not (sidecar / "events.jsonl").is_file():
        return None
    report = verify(sidecar)
    if report.state is None:
        return {"verified": False, "failures": report.failures(), "label": None, "summary": None}
    return {"verified": report.ok, "failures": report.failures(), "label": label_document(report.state),
            "summary": summary_line(report.state, verified=report.ok)}
