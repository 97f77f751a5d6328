"""``bench assess verify`` / ``show``: the chain, the rules, the label file, the evidence.

Each check gives a line; the sidecar verifies when none failed. The chain
and the rules come from reading the log (:func:`benchflow.assess.log.read_events`,
:func:`benchflow.assess.reducer.fold`); the label file must equal the label
rebuilt from the log; with evidence, both attempts' output and review artifact,
the frozen rubric and the frozen protocol are hashed again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.assess.attempt import ref_sha256, stale_parts
from benchflow.assess.log import LogBroken, Sidecar, read_events
from benchflow.assess.reducer import RuleBroken, State, fold, label_document
from benchflow.util.files import sha256_hex


@dataclass
class Report:
    sidecar: str
    ok: bool = True
    checks: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    state: State | None = None

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append({"check": name, "ok": ok, "detail": detail})
        self.ok = self.ok and ok

    def failures(self) -> list[str]:
        return [f"{c['check']}: {c['detail']}" for c in self.checks if not c["ok"]]


def label_file_matches(sidecar: Sidecar, state: State) -> tuple[bool, str]:
    if not sidecar.label.is_file():
        return False, f"{sidecar.label} is missing; write it with bench assess label --write"
    try:
        on_disk = json.loads(sidecar.label.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return False, f"{sidecar.label} is not JSON ({exc.__class__.__name__})"
    if on_disk != label_document(state):
        return False, f"{sidecar.label} differs from the log's label; rewrite it with bench assess label --write"
    return True, f"{sidecar.label.name} equals the log's label"


def _evidence(sidecar: Sidecar, created: dict[str, Any], report: Report) -> None:
    for side in "AB":
        attempt = created["attempts"][side]
        ref = attempt["ref"]
        stale = stale_parts(ref)
        if ref_sha256(ref) != attempt["ref_sha256"]:
            stale.insert(0, "reference does not hash to ref_sha256")
        report.add(f"evidence attempt {side}", not stale,
                   "; ".join(stale) if stale else f"attempt {side}: output and review artifact hash as recorded")
    for part in ("rubric", "protocol"):
        frozen = sidecar.root / created[part]["file"]
        try:
            now = sha256_hex(frozen)
        except OSError as exc:
            report.add(f"evidence {part}", False, f"{frozen}: {exc.strerror or exc}")
            continue
        good = now == created[part]["sha256"]
        report.add(f"evidence {part}", good, f"{created[part]['file']} hashes as recorded" if good else
                   f"{created[part]['file']}: sha256 {now[:12]} != recorded {created[part]['sha256'][:12]}")


def verify(root: Path, *, evidence: bool = False, expect_event: str | None = None) -> Report:
    """Every check of one sidecar. A missing sidecar is bad input (raises); a failed check is in the report."""
    sidecar = Sidecar(root)
    report = Report(sidecar=str(root))
    try:
        events = read_events(sidecar)
    except LogBroken as exc:
        report.add("chain", False, str(exc))
        return report
    report.events = events
    report.add("chain", True, f"{len(events)} events, head {events[-1]['sha256'][:12]}")
    try:
        state = fold(events)
    except RuleBroken as exc:
        report.add("rules", False, str(exc))
        return report
    report.state = state
    report.add("rules", True, "every event is allowed where it stands")
    report.add("label file", *label_file_matches(sidecar, state))
    if expect_event:
        wanted = expect_event.strip().lower()
        found = any(e["sha256"] == wanted for e in events)
        report.add("expected event", found, f"{wanted[:12]} is in the log" if found else
                   f"{wanted} is not in the log (the log was changed after the receipt, or another sidecar)")
    if evidence:
        _evidence(sidecar, state.created or {}, report)
    return report
