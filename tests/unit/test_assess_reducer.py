"""The label is a pure function of the log: rules, the label rule, and property tests over generated logs."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchflow.assess.reducer import RuleBroken, fold, label_document

CHOICE_LABEL = {"left": 1, "right": 0, "tie": 0.5, "abstain": None}


class Log:
    """Synthetic events (hashes are made up: the fold checks rules, the log module checks hashes)."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def add(self, kind: str, **payload) -> str:
        seq = len(self.events)
        sha = hashlib.sha256(json.dumps([seq, kind, payload], sort_keys=True).encode()).hexdigest()
        self.events.append({"seq": seq, "type": kind, "payload": payload, "sha256": sha,
                            "recorded_at": f"2026-01-01T00:00:{seq:02d}Z", "idempotency_key": f"k{seq}"})
        return sha

    def reduce(self) -> None:
        state = fold(self.events)
        label, status, basis = state.called_for()
        self.add("reduced", revision=len(state.revisions) + 1, label=label, state=status, basis=basis)


def started(choice: str = "left") -> tuple[Log, str]:
    log = Log()
    log.add("created", task={"name": "t"}, attempts={})
    log.add("released", observations=[])
    log.add("assigned", assignment_id="a_1", shown={})
    answer = log.add("answered", choice=choice, actor="alice", actor_role="reviewer", reason="", tags=[])
    return log, answer


@pytest.mark.parametrize("choice", ["left", "right", "tie", "abstain"])
def test_each_choice_gives_its_label(choice: str) -> None:
    log, _ = started(choice)
    log.reduce()
    doc = label_document(fold(log.events))
    assert doc["label"] == CHOICE_LABEL[choice]
    assert doc["state"] == ("withheld" if choice == "abstain" else "ready")
    assert doc["revision"] == 1 and doc["reduce_due"] is False


def test_retraction_withholds_and_keeps_history() -> None:
    log, answer = started("left")
    log.reduce()
    log.add("retracted", target=answer, reason="wrong pair", actor="ops", actor_role="operator")
    assert label_document(fold(log.events))["reduce_due"] is True
    log.reduce()
    doc = label_document(fold(log.events))
    assert (doc["label"], doc["state"], doc["revision"]) == (None, "withheld", 2)
    assert [r["label"] for r in doc["revisions"]] == [1, None]


@pytest.mark.parametrize("bad, message", [
    (lambda log, a: log.add("answered", choice="left", actor="bob", actor_role="reviewer"), "already imported"),
    (lambda log, a: log.add("corrected", supersedes="f" * 64, choice="tie", actor="alice", actor_role="reviewer"),
     "not the current effective answer"),
    (lambda log, a: log.add("corrected", supersedes=a, choice="tie", actor="bob", actor_role="reviewer"),
     "not the answer's own reviewer"),
    (lambda log, a: log.add("reduced", revision=1, label=0, state="ready", basis=a), "not the one the log calls"),
    (lambda log, a: log.add("consumed", revision=1, revision_event="x", consumer="c", receipt="r"),
     "no label revision 1"),
    (lambda log, a: log.add("released", observations=[]), "already recorded"),
])
def test_rules_refuse(bad, message: str) -> None:
    log, answer = started("left")
    bad(log, answer)
    with pytest.raises(RuleBroken, match=message):
        fold(log.events)


def test_order_of_the_lifecycle_is_enforced() -> None:
    log = Log()
    log.add("created", task={}, attempts={})
    log.add("assigned", assignment_id="a_1", shown={})
    with pytest.raises(RuleBroken, match="before the release"):
        fold(log.events)


def test_withdraw_needs_a_superseded_revision_and_a_fitting_disposition() -> None:
    log, answer = started("left")
    log.reduce()
    revision_event = fold(log.events).current.event
    log.add("consumed", revision=1, revision_event=revision_event, consumer="trainer", receipt="row-1")
    corrected = log.add("corrected", supersedes=answer, choice="right", actor="alice", actor_role="reviewer",
                        reason="", correction_reason="misread", tags=[])
    log.reduce()
    assert fold(log.events).effective == corrected
    for disposition, ok in (("not_applicable", False), ("queued_compensation", True)):
        trial = copy.deepcopy(log)
        trial.add("withdrawn", revision=1, reason="misread", disposition=disposition, actor="ops",
                  actor_role="operator")
        if ok:
            assert label_document(fold(trial.events))["revisions"][0]["withdrawn"]["disposition"] == disposition
        else:
            with pytest.raises(RuleBroken, match="was consumed"):
                fold(trial.events)


# ---- properties ------------------------------------------------------------------------------

steps = st.lists(st.tuples(st.sampled_from(["correct", "retract", "reduce"]),
                           st.sampled_from(list(CHOICE_LABEL)), st.integers(0, 3)), max_size=8)


def build(first: str, script: list[tuple[str, str, int]]) -> tuple[Log, list[list[int]]]:
    """A valid log from a script; returns it and, per revision, the indexes of its consumed events."""
    log, _ = started(first)
    consumed: list[list[int]] = []
    for op, choice, consumers in script:
        state = fold(log.events)
        if op == "reduce" or state.reduce_due() and op != "retract":
            if state.reduce_due():
                log.reduce()
                state = fold(log.events)
                consumed.append([])
                if state.current.state == "ready":
                    for n in range(consumers):
                        consumed[-1].append(len(log.events))
                        log.add("consumed", revision=state.current.revision, revision_event=state.current.event,
                                consumer=f"c{n}", receipt=f"r{n}")
        elif op == "correct" and state.effective:
            log.add("corrected", supersedes=state.effective, choice=choice, actor="alice", actor_role="reviewer",
                    reason="", correction_reason="changed", tags=[])
        elif op == "retract" and state.effective:
            log.add("retracted", target=state.effective, reason="bad", actor="ops", actor_role="operator")
    if fold(log.events).reduce_due():
        log.reduce()
    return log, consumed


@settings(max_examples=150, deadline=None)
@given(first=st.sampled_from(list(CHOICE_LABEL)), script=steps)
def test_label_is_a_pure_function_of_the_log(first: str, script) -> None:
    log, _ = build(first, script)
    doc = label_document(fold(log.events))
    again = copy.deepcopy(log.events)
    for event in again:  # when and under which key a write happened does not change the label
        event["recorded_at"], event["idempotency_key"] = "1999-01-01T00:00:00Z", "other"
    assert label_document(fold(again)) == doc == label_document(fold(log.events))
    state = fold(log.events)
    expected = None if state.effective is None else CHOICE_LABEL[state.answers[state.effective]["choice"]]
    assert doc["label"] == expected and doc["reduce_due"] is False


@settings(max_examples=150, deadline=None)
@given(first=st.sampled_from(["left", "right", "tie"]), script=steps, data=st.data())
def test_reordering_independent_events_keeps_the_label(first: str, script, data) -> None:
    log, consumed = build(first, script)
    doc = label_document(fold(log.events))
    events = list(log.events)
    for block in consumed:  # receipts of different consumers on one revision are independent of each other
        if len(block) > 1:
            order = data.draw(st.permutations(block))
            for slot, index in zip(block, order):
                events[slot] = log.events[index]
    assert label_document(fold(events)) == doc
