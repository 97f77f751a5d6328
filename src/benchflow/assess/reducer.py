"""The pure fold of an assessment log into its state, and the label it calls for.

Nothing here reads a file or the clock: :func:`fold` takes the events and
returns the state, raising :class:`RuleBroken` at the first event the rules
do not allow. Writers validate a new event by folding the log with it;
``verify`` folds the whole log; the label file is :func:`label_document` of
the state. The label rule:

- the effective answer is the imported vote, or the correction that
  superseded it last; a retraction leaves none;
- its choice ``left`` (attempt A) → 1, ``right`` (attempt B) → 0, ``tie`` →
  0.5, ``abstain`` (a skipped vote) → withheld; no effective answer after a
  retraction → withheld;
- ``reduced`` events number the label's revisions; a new revision is recorded
  only when the effective answer changed since the last one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LABEL_SCHEMA = "benchflow.assessment-label.v1"
CHOICES = {"left": 1, "right": 0, "tie": 0.5, "abstain": None}
DISPOSITIONS = ("not_applicable", "queued_compensation", "compensated")
ORDER = ("created", "released", "assigned")


class RuleBroken(Exception):
    """An event the log's rules do not allow at its place. Not a BenchError: the readers (verify, show)
    catch it and report the broken log themselves."""


@dataclass
class Revision:
    revision: int
    label: float | int | None
    state: str  # ready | withheld
    basis: str
    event: str
    consumers: list[dict[str, Any]] = field(default_factory=list)
    withdrawn: dict[str, Any] | None = None

    def to_json(self, current: bool) -> dict[str, Any]:
        return {"revision": self.revision, "label": self.label, "state": self.state, "basis": self.basis,
                "event": self.event, "current": current,
                "consumers": sorted(self.consumers, key=lambda c: (c["consumer"], c["receipt"], c["event"])),
                "withdrawn": self.withdrawn}


@dataclass
class State:
    created: dict[str, Any] | None = None
    created_event: str | None = None
    released: str | None = None
    assigned: dict[str, Any] | None = None
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    effective: str | None = None
    answered: bool = False
    retracted_by: str | None = None
    revisions: list[Revision] = field(default_factory=list)
    head: str | None = None
    count: int = 0

    @property
    def current(self) -> Revision | None:
        return self.revisions[-1] if self.revisions else None

    def called_for(self) -> tuple[float | int | None, str, str] | None:
        """(label, state, basis event) the log calls for now; None before any answer."""
        if not self.answered:
            return None
        if self.effective is None:
            return None, "withheld", self.retracted_by or ""
        value = CHOICES[self.answers[self.effective]["choice"]]
        return value, "withheld" if value is None else "ready", self.effective

    def reduce_due(self) -> bool:
        wanted = self.called_for()
        if wanted is None:
            return False
        current = self.current
        return current is None or (current.label, current.state, current.basis) != wanted

    def revision(self, number: int) -> Revision:
        if not 1 <= number <= len(self.revisions):
            raise RuleBroken(f"no label revision {number} (the log has {len(self.revisions)})")
        return self.revisions[number - 1]


def _need(condition: bool, message: str) -> None:
    if not condition:
        raise RuleBroken(message)


def _answer_checks(state: State, payload: dict[str, Any]) -> None:
    _need(payload.get("choice") in CHOICES, f"choice {payload.get('choice')!r} is not one of "
          f"{', '.join(CHOICES)}")


def _replaces_effective(state: State, target: str, payload: dict[str, Any], flag: str) -> None:
    _need(state.effective is not None, "there is no effective answer (none imported yet, or it was retracted)")
    _need(target == state.effective, f"{flag} {target[:12]} is not the current effective answer "
          f"({state.effective[:12] if state.effective else '-'})")
    if payload.get("actor_role") == "reviewer":
        own = state.answers[state.effective]["actor"]
        _need(payload.get("actor") == own, f"actor {payload.get('actor')!r} is not the answer's own reviewer "
              f"({own!r}); use --actor-role operator")
    else:
        _need(payload.get("actor_role") == "operator", "actor_role must be reviewer or operator")


def apply(state: State, event: dict[str, Any]) -> None:
    """Fold one event into ``state`` (in place), or raise :class:`RuleBroken`."""
    kind, payload, sha = event["type"], event["payload"], event["sha256"]
    if kind == "created":
        _need(state.created is None, "the assessment was already created")
        _need(state.count == 0, "created must be the first event")
        state.created, state.created_event = payload, sha
    else:
        _need(state.created is not None, f"{kind} before the assessment was created")
    if kind == "released":
        _need(state.released is None, "the release is already recorded")
        state.released = sha
    elif kind == "assigned":
        _need(state.released is not None, "assign before the release: record the release first (bench assess "
              "release)")
        _need(state.assigned is None, "an assignment is already bound")
        state.assigned = {**payload, "event": sha}
    elif kind == "answered":
        _need(state.assigned is not None, "a vote before the assignment: bind it first (bench assess assign)")
        _need(not state.answered, "a vote is already imported; change it with correct or retract")
        _answer_checks(state, payload)
        state.answers[sha], state.effective, state.answered = payload, sha, True
    elif kind == "corrected":
        _replaces_effective(state, payload.get("supersedes", ""), payload, "--supersedes")
        _answer_checks(state, payload)
        state.answers[sha], state.effective = payload, sha
    elif kind == "retracted":
        _replaces_effective(state, payload.get("target", ""), payload, "--target")
        state.effective, state.retracted_by = None, sha
    elif kind == "reduced":
        wanted = state.called_for()
        _need(wanted is not None, "nothing to reduce: no vote imported yet")
        _need(state.reduce_due(), "the label did not change since the last revision")
        got = (payload.get("label"), payload.get("state"), payload.get("basis"))
        _need(got == wanted, f"reduced label {got} is not the one the log calls for {wanted}")
        _need(payload.get("revision") == len(state.revisions) + 1, "revision numbers must follow each other")
        state.revisions.append(Revision(payload["revision"], payload["label"], payload["state"],
                                        payload["basis"], sha))
    elif kind == "consumed":
        revision = state.revision(payload.get("revision", 0))
        _need(revision is state.current, f"revision {revision.revision} is superseded; consume the current "
              f"one ({state.current.revision if state.current else '-'})")
        _need(not state.reduce_due(), f"revision {revision.revision} is stale: the log calls for a new label; "
              "run bench assess reduce")
        _need(revision.state == "ready", f"revision {revision.revision} is withheld, not ready")
        _need(payload.get("revision_event") == revision.event, "revision_event does not name the revision")
        revision.consumers.append({"consumer": payload["consumer"], "receipt": payload["receipt"], "event": sha})
    elif kind == "withdrawn":
        revision = state.revision(payload.get("revision", 0))
        _need(revision is not state.current, f"revision {revision.revision} is current; only a corrected or "
              "retracted (superseded) revision can be withdrawn")
        _need(revision.withdrawn is None, f"revision {revision.revision} is already withdrawn")
        disposition = payload.get("disposition")
        _need(disposition in DISPOSITIONS, f"disposition {disposition!r} is not one of {', '.join(DISPOSITIONS)}")
        _need(disposition != "not_applicable" or not revision.consumers, f"revision {revision.revision} was "
              "consumed: its disposition is queued_compensation or compensated")
        _need(payload.get("actor_role") in ("operator", "reducer"), "actor_role must be operator or reducer")
        revision.withdrawn = {"reason": payload["reason"], "disposition": disposition, "actor": payload["actor"],
                              "event": sha}
    elif kind not in ("created",):
        raise RuleBroken(f"unknown event type {kind!r}")
    state.head, state.count = sha, state.count + 1


def fold(events: list[dict[str, Any]]) -> State:
    """The state of a log; raises :class:`RuleBroken` naming the first event that breaks a rule."""
    state = State()
    for event in events:
        try:
            apply(state, event)
        except (RuleBroken, KeyError, TypeError) as exc:
            raise RuleBroken(f"event {event.get('seq')} ({event.get('type')}): {exc}") from exc
    return state


def label_document(state: State) -> dict[str, Any]:
    """The label file's content: rebuilt from the log alone."""
    current = state.current
    created = state.created or {}
    return {
        "schema": LABEL_SCHEMA,
        "assessment": state.created_event,
        "task": created.get("task"),
        "revision": current.revision if current else None,
        "label": current.label if current else None,
        "state": current.state if current else "pending",
        "basis": current.basis if current else None,
        "reduce_due": state.reduce_due(),
        "revisions": [r.to_json(r is current) for r in state.revisions],
    }
