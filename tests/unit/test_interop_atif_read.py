"""Reading an ATIF trajectory back as a conversation: our own export round-trips, and what Harbor's agents
write beyond it (results naming no call, copied context, tool definitions) reaches the training rows right."""

from __future__ import annotations

import copy
import json
import shutil
import sys
from pathlib import Path

import pytest
from fixtures.interop_job import interop_job, require_tool_folder

from benchflow.interop import atif_read
from benchflow.interop.turns import turns_of
from benchflow.records import Unreadable
from benchflow.results.trajectory import read_all
from benchflow.train import atif
from benchflow.train.convert import ConvertOptions, convert
from benchflow.util.redact import redact_obj
from tests.conftest import run_bench

HARBOR_TRIAL = (Path(__file__).resolve().parents[1] / "fixtures" / "harbor-job" / "jobs" / "2026-05-01__10-00-00"
                / "fix-bug__Qm7aZ2k")


@pytest.fixture
def harbor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Harbor 0.25's own ATIF models importable, from the wheel scripts/setup.d/interop-formats.sh unpacks."""
    monkeypatch.syspath_prepend(str(require_tool_folder("harbor")))


@pytest.fixture
def no_harbor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "harbor.models.trajectories", None)  # its import raises ImportError


def terminus_document() -> dict:
    """What Harbor's terminus-2 writes after a context summary: copied steps, two commands sharing one
    terminal output (a result naming no call), its tool definitions."""
    return {
        "schema_version": "ATIF-v1.6", "session_id": "s",
        "agent": {"name": "terminus-2", "version": "2.0.0", "model_name": "openai/gpt-5", "tool_definitions": [
            {"type": "function", "function": {"name": "bash_command", "parameters": {"type": "object"}}}]},
        "steps": [
            {"step_id": 1, "source": "system", "message": "You are an agent in a terminal.", "is_copied_context": True},
            {"step_id": 2, "source": "user", "message": "Count the log lines.", "is_copied_context": True},
            {"step_id": 3, "source": "agent", "message": "Looking.", "is_copied_context": True,
             "tool_calls": [{"tool_call_id": "call_1_1", "function_name": "bash_command",
                             "arguments": {"keystrokes": "ls\n", "duration": 0.1}}],
             "observation": {"results": [{"source_call_id": "call_1_1", "content": "app.log"}]}},
            {"step_id": 4, "source": "agent", "message": "Analysis: two commands.", "llm_call_count": 1,
             "tool_calls": [{"tool_call_id": "call_2_1", "function_name": "bash_command",
                             "arguments": {"keystrokes": "wc -l app.log\n", "duration": 0.1}},
                            {"tool_call_id": "call_2_2", "function_name": "bash_command",
                             "arguments": {"keystrokes": "echo done\n", "duration": 0.1}}],
             "observation": {"results": [{"content": "42 app.log\ndone"}]},
             "metrics": {"prompt_tokens": 900, "completion_tokens": 40}},
            {"step_id": 5, "source": "agent", "message": "", "llm_call_count": 0,
             "tool_calls": [{"tool_call_id": "call_3_1", "function_name": "mark_task_complete", "arguments": {}}]},
            {"step_id": 6, "source": "agent", "message": [{"type": "text", "text": "There are 42 lines."}],
             "reasoning_content": "The count is in the output.", "llm_call_count": 1},
        ],
    }


def test_our_export_read_back_is_the_same_conversation(tmp_path: Path) -> None:
    job = interop_job(tmp_path)
    proc = run_bench("traj", "export", str(job), "--format", "atif", "--out", str(tmp_path / "atif"))
    assert proc.returncode == 0, proc.stderr
    written = sorted((tmp_path / "atif").glob("*/trajectory.json"))
    assert [p.parent.name for p in written] == ["fix-calc__0000aaaa", "fix-calc__0000bbbb", "fix-calc__0000cccc"]
    for path in written:
        ours = turns_of(redact_obj(read_all(job / path.parent.name, "acp")))  # what the export shares: redacted
        back = atif_read.read(path)
        assert back.turns == ours, path.parent.name
        assert back.step_ids == list(range(1, len(ours) + 1)) and back.copied == frozenset()
    agent = atif.exchanges(atif_read.read(written[0]))
    assert [e.messages[-1]["content"] for e in agent] == ["Running the tests.", "Fixing calc.py.",
                                                          "Done: the test passes."]
    assert atif.exchanges(atif_read.read(written[2])) == []  # the oracle's script called no model


def test_a_result_naming_no_call_is_what_the_environment_answered(no_harbor) -> None:
    read = atif_read.conversation(terminus_document(), "t.json")
    assert [(t.source, s) for t, s in zip(read.turns, read.step_ids)] == [
        ("system", 1), ("user", 2), ("agent", 3), ("agent", 4), ("user", 4), ("agent", 5), ("agent", 6)]
    assert read.turns[4].message == "42 app.log\ndone" and read.turns[4].extra == {"observation_of_step": 4}
    assert [t.output for t in read.turns[3].tools] == [None, None]  # the shared output names neither call
    assert read.turns[6].message == "There are 42 lines." and read.turns[6].reasoning == "The count is in the output."
    assert read.copied == {1, 2, 3} and read.model == "openai/gpt-5"


def test_copied_context_and_deterministic_steps_are_context_never_answers(no_harbor) -> None:
    exchanges = atif.exchanges(atif_read.conversation(terminus_document(), "t.json"))
    assert [e.step_id for e in exchanges] == [4, 6]
    last = exchanges[-1].messages
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant",
                                         "assistant"]
    assert last[-1] == {"role": "assistant", "content": "There are 42 lines."}  # reasoning stays private


def test_harbor_trial_rows_carry_the_trajectorys_tool_definitions(tmp_path: Path, harbor) -> None:
    trial = tmp_path / "job" / HARBOR_TRIAL.name
    shutil.copytree(HARBOR_TRIAL.parent, tmp_path / "job")
    (trial / "agent" / "trajectory.json").write_text(json.dumps(terminus_document()))
    out = tmp_path / "rows.jsonl"
    doc = convert(ConvertOptions(source=trial, out=out, row_mode="exchange"))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["exchange_index"] for r in rows] == [4, 6] and doc["exchanges_seen"] == 2
    assert rows[0]["tool_defs"] == terminus_document()["agent"]["tool_definitions"]
    # the output the two calls shared is the environment's (user) message, where prime-sft's window starts
    last = rows[1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "assistant"]
    assert last[1]["content"] == "42 app.log\ndone" and last[-1]["content"] == "There are 42 lines."


def test_a_document_harbors_model_refuses_is_unreadable(harbor) -> None:
    document = terminus_document()
    document["steps"][1]["reasoning_content"] = "a user step cannot think"  # Harbor: agent-only field
    with pytest.raises(Unreadable, match=r"^t\.json: not an ATIF trajectory .*reasoning_content"):
        atif_read.conversation(document, "t.json")


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d.update(schema_version="2.0"), "schema_version"),
    (lambda d: d.update(steps=[]), "steps"),
    (lambda d: d["steps"][0].update(source="tool"), r"steps\[0\]\.source"),
    (lambda d: d["steps"][5].update(reasoning_content=["a", "list"]), r"steps\[5\]\.reasoning_content"),
    (lambda d: d["steps"][3]["tool_calls"][0].pop("arguments"), r"steps\[3\]\.tool_calls\[0\]"),
    (lambda d: d["steps"][3].update(observation={"results": [{"content": 7}]}), r"steps\[3\]\.observation"),
])
def test_without_harbor_the_fields_read_are_checked(no_harbor, change, field) -> None:
    document = copy.deepcopy(terminus_document())
    change(document)
    with pytest.raises(Unreadable, match=field):
        atif_read.conversation(document, "t.json")


def test_an_unreadable_trajectory_skips_its_trial_with_a_note(tmp_path: Path) -> None:
    shutil.copytree(HARBOR_TRIAL.parent, tmp_path / "job")
    bad = tmp_path / "job" / HARBOR_TRIAL.name / "agent" / "trajectory.json"
    bad.write_text(json.dumps({"schema_version": "ATIF-v1.7", "steps": "none"}))
    doc = convert(ConvertOptions(source=tmp_path / "job", out=tmp_path / "rows.jsonl"))
    assert doc["skipped_unreadable_trajectory"] == 1 and doc["rows_written"] == 2  # the other two trials
    assert any(note.startswith(f"{bad}: not an ATIF trajectory (steps") for note in doc["notes"])
