"""What a monitor's judge is shown: every trajectory kind read as turns, and rendered to fit its prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.errors import UserError
from benchflow.monitor.render import render
from benchflow.monitor.transcript import read_file
from tests.fixtures.train_jobs import conversation, exchange

HARBOR_TRIAL = (Path(__file__).resolve().parents[1] / "fixtures" / "harbor-job" / "jobs" / "2026-05-01__10-00-00"
                / "regex-log__Lw2nV8d")


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_acp_events_become_turns_with_tool_results(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "acp_trajectory.jsonl", [
        {"type": "user_message", "text": "Make hello.txt"},
        {"type": "agent_thought", "text": "I will use the shell."},
        {"type": "tool_call", "tool_call_id": "tc_1", "kind": "execute", "status": "pending",
         "raw_input": {"command": "echo hi > hello.txt"}},
        {"type": "tool_call_update", "tool_call_id": "tc_1", "status": "failed",
         "content": [{"type": "content", "content": {"type": "text", "text": "permission denied"}}]},
        {"type": "agent_message", "text": "I could not write it."},
    ])
    transcript = read_file(path)
    assert transcript.kind == "acp"
    assert transcript.record() == {"kind": "acp", "turns": 3, "tool_calls": 1}
    text, cut = render(transcript.turns)
    assert cut == 0
    assert "--- turn 1: user\nMake hello.txt" in text
    assert "(thinking) I will use the shell." in text
    assert '> tool call execute [tc_1]: {"command": "echo hi > hello.txt"}' in text
    assert "< [tc_1] (failed): permission denied" in text
    assert text.index("permission denied") < text.index("I could not write it.")


def test_model_calls_read_as_the_parent_agents_last_conversation(tmp_path: Path) -> None:
    calls = conversation("fix-bug", 3)
    subagent = exchange([{"role": "system", "content": "You are a subagent."},
                         {"role": "user", "content": "Look something up"}],
                        {"role": "assistant", "content": "SUBAGENT ANSWER"}, index=9)
    failed = exchange(calls[-1]["request"]["body"]["messages"], {"role": "assistant", "content": "x"}, status=429)
    path = _jsonl(tmp_path / "llm_trajectory.jsonl", [*calls[:2], subagent, calls[2], failed])
    transcript = read_file(path)
    assert transcript.kind == "llm"
    assert transcript.notes == ["1 subagent conversation(s) left out"]
    text, _ = render(transcript.turns)
    assert "--- turn 1: system\nYou are a careful agent." in text
    assert '> tool call bash [call_fix-bug_0]: {"command": "echo step 0"}' in text
    assert "< [call_fix-bug_0]: step 0" in text  # the tool message became the call's output
    assert "Done. " in text and "SUBAGENT ANSWER" not in text


def test_an_atif_trajectory_is_read_with_its_observations() -> None:
    transcript = read_file(HARBOR_TRIAL / "agent" / "trajectory.json")
    assert transcript.kind == "atif"
    text, _ = render(transcript.turns)
    assert "Solve the task regex-log" in text
    assert "> tool call Write [toolu_00101]" in text
    assert "< [toolu_00101]: File created successfully at: /app/regex.txt" in text


@pytest.mark.parametrize("content, expected", [
    ("", "empty"),
    ("just some text\n", "not a trajectory this reads"),
    ('{"schema_version": "ATIF-v1.7", "steps": []}', "not an ATIF trajectory"),
    ('{"name": "x"}\n{"name": "y"}\n', "not a trajectory this reads"),
])
def test_a_file_that_is_no_trajectory_is_refused_with_one_line(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "input.jsonl"
    path.write_text(content)
    with pytest.raises(UserError, match=expected) as raised:
        read_file(path)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_model_calls_that_all_failed_leave_nothing_to_judge(tmp_path: Path) -> None:
    calls = [exchange([{"role": "user", "content": "hi"}], {"role": "assistant", "content": "x"}, status=500)]
    with pytest.raises(UserError, match="no model call answered 200"):
        read_file(_jsonl(tmp_path / "llm.jsonl", calls))


def test_missing_file_and_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        read_file(tmp_path / "nope.jsonl")
    with pytest.raises(UserError, match="bench monitor replay"):
        read_file(tmp_path)


def test_a_long_rollout_keeps_its_opening_and_its_end() -> None:
    from benchflow.interop.turns import Turn

    turns = [Turn("user", message="THE REQUEST")] + [Turn("agent", message=f"step {n} " + "x" * 900)
                                                     for n in range(200)] + [Turn("agent", message="THE END")]
    text, cut = render(turns, budget=20_000)
    assert "THE REQUEST" in text and "THE END" in text
    assert cut > 150 and f"[… {cut} turn(s) left out here to fit the judge's prompt …]" in text
    assert len(text.encode()) <= 20_000
