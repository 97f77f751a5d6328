"""The production event stream ``bench monitor watch`` reads: rollouts gathered line by line until they end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.errors import UserError
from benchflow.monitor.events import Collector
from benchflow.monitor.verdict import rollout_folder
from tests.fixtures.train_jobs import conversation


def _line(**fields) -> bytes:
    return json.dumps(fields).encode()


def test_interleaved_rollouts_end_one_by_one_with_their_own_lines() -> None:
    collector = Collector()
    lines = [_line(rollout="a", event={"type": "user_message", "text": "A asks"}),
             _line(rollout=7, event={"type": "user_message", "text": "B asks"}, metadata={"region": "eu-1"}),
             _line(rollout="a", event={"type": "agent_message", "text": "A answers"}),
             _line(rollout="7", metadata={"deployment": "d-2"}, end=True),
             _line(rollout="a", end=True)]
    ended = [collector.add(n, line)[0] for n, line in enumerate(lines, 1)]
    assert [r.id if r else None for r in ended] == [None, None, None, "7", "a"]
    b, a = ended[3], ended[4]
    assert b.metadata == {"region": "eu-1", "deployment": "d-2"}  # an integer id is the same rollout as its text
    assert [e["text"] for e in a.events] == ["A asks", "A answers"] and a.kind == "acp"
    assert collector.open == {} and collector.skipped == 0


@pytest.mark.parametrize("line, problem", [
    (b"not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (_line(event={"type": "user_message"}), "no 'rollout' id (a string or an integer)"),
    (_line(rollout=True, end=True), "no 'rollout' id (a string or an integer)"),
    (_line(rollout="a"), "none of 'event', 'exchange', 'metadata', 'end'"),
    (_line(rollout="a", event="hello"), "'event' is not a JSON object"),
    (_line(rollout="a", event={"text": "no type"}), "'event' has no 'type'"),
    (_line(rollout="a", end="yes"), "'end' is not true or false"),
])
def test_a_bad_line_is_skipped_with_a_note_naming_it(line: bytes, problem: str) -> None:
    collector = Collector()
    assert collector.add(12, line) == (None, f"line 12: {problem}; skipped")
    assert collector.skipped == 1 and collector.open == {}


def test_payloads_are_redacted_as_they_arrive() -> None:
    collector = Collector()
    secret = "sk-ant-api03-" + "A" * 40
    collector.add(1, _line(rollout="a", event={"type": "agent_message", "text": f"my key is {secret}"},
                           metadata={"api_key": "hunter2-hunter2"}))
    rollout, _ = collector.add(2, _line(rollout="a", end=True))
    kept = json.dumps([rollout.events, rollout.metadata])
    assert secret not in kept and "hunter2" not in kept


def test_model_calls_are_judged_when_no_event_came() -> None:
    collector = Collector()
    for n, call in enumerate(conversation("t", 2), 1):
        collector.add(n, _line(rollout="r", exchange=call))
    rollout, _ = collector.add(9, _line(rollout="r", end=True))
    assert rollout.kind == "llm" and rollout.trajectory_name == "llm_trajectory.jsonl"
    assert rollout.transcript().kind == "llm"
    empty, _ = collector.add(10, _line(rollout="e", metadata={"x": 1}, end=True))
    with pytest.raises(UserError, match="nothing to judge"):
        empty.transcript()


def test_rollouts_left_open_are_taken_in_the_order_they_began() -> None:
    collector = Collector()
    collector.add(1, _line(rollout="late", event={"type": "user_message", "text": "x"}))
    collector.add(2, _line(rollout="early-ended", event={"type": "user_message", "text": "x"}, end=True))
    collector.add(3, _line(rollout="last", event={"type": "user_message", "text": "x"}))
    assert [r.id for r in collector.take_open()] == ["late", "last"]
    assert collector.open == {}


def test_rollout_folders_are_safe_names_and_never_reused(tmp_path: Path) -> None:
    assert rollout_folder(tmp_path, "r-1").name == "r-1"
    assert rollout_folder(tmp_path, "r-1").name == "r-1__2"
    odd = rollout_folder(tmp_path, "../../etc/passwd")
    assert odd.parent == tmp_path / "rollouts" and odd.name.startswith("etc-passwd-")
    assert rollout_folder(tmp_path, "a/b").name != rollout_folder(tmp_path, "a_b").name
