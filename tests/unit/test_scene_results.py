"""A scene trial read back: bench results / bench eval inspect show its turns and the simulated user's rounds."""

from __future__ import annotations

import csv
import json

from tests.conftest import run_bench
from tests.fixtures.jobgen import TrialSpec, write_job
from tests.fixtures.scene_trial import USER, WRITER, scene_job


def test_bench_results_lists_each_scene_turn_and_the_user_rounds(tmp_path):
    job = scene_job(tmp_path)
    out = run_bench("results", str(job))
    assert out.returncode == 0, out.stderr
    assert ("scene-task__aaaa0001 turns: 01 writer (claude-agent-acp) finished · 02 reviewer (codex-acp) failed · "
            "03 editor (claude-agent-acp) not run") in out.stdout
    assert "user-task__aaaa0002 simulated user: 1 of 3 rounds (model scripted), stopped: satisfied" in out.stdout
    assert "plain-task__aaaa0003 turns" not in out.stdout
    doc = json.loads(run_bench("eval", "inspect", str(job), "--json", "--csv", str(tmp_path / "t.csv")).stdout)
    rows = {r["task_name"]: r for r in csv.DictReader((tmp_path / "t.csv").open())}
    assert [t["role"] for t in json.loads(rows["scene-task"]["turns"])] == ["writer", "reviewer", "editor"]
    rows = {t["task_name"]: t for t in doc["trials"]}
    assert [(t["role"], t["status"], t["total_tokens"], t["seconds"]) for t in rows["scene-task"]["turns"]] == [
        ("writer", "finished", 4200, 11.5), ("reviewer", "failed", None, 2.0), ("editor", "not_run", None, None)]
    assert rows["scene-task"]["turns"][0]["user_rounds"] == 1 and rows["plain-task"]["turns"] is None
    assert rows["user-task"]["simulated_user"] == {"model": "scripted", "rounds": 1, "max_rounds": 3,
                                                   "stopped_by": "satisfied"}


def test_inspecting_a_scene_trial_shows_the_turn_table_errors_and_replies(tmp_path):
    trial = scene_job(tmp_path) / "scene-task__aaaa0001"
    out = run_bench("eval", "inspect", str(trial))
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if line.strip().startswith("01 "))
    assert row.split()[:10] == ["01", "review", "writer", "claude-agent-acp", "claude-sonnet-4-6", "finished", "5",
                                "4200", "11.5", "1"]
    assert "turn 02 error [agent_integration]: the agent exited with status 1" in out.stdout
    assert "user round 1 (turns/01-writer): door_code: 4417" in out.stdout
    doc = json.loads(run_bench("eval", "inspect", str(trial), "--json").stdout)
    assert [t["folder"] for t in doc["summary"]["turns"]] == ["turns/01-writer", "turns/02-reviewer",
                                                             "turns/03-editor"]
    assert doc["conversations"] == [{"folder": "turns/01-writer", **USER}]


def test_an_unreadable_turn_record_is_a_note_and_a_reply_prints_without_control_characters(tmp_path):
    job = write_job(tmp_path, "job", [TrialSpec("scene-task", suffix="bbbb0001", files={
        "turns/01-writer/turn.json": json.dumps(WRITER), "turns/02-reviewer/turn.json": "{not json",
        "simulated-user.json": json.dumps({**USER, "rounds": [{"round": 1, "reply": "ok\x1b[2J\nwiped"}]})})])
    out = run_bench("eval", "inspect", str(job / "scene-task__bbbb0001"), "--json")
    doc = json.loads(out.stdout)
    assert [t["role"] for t in doc["summary"]["turns"]] == ["writer"]
    assert any("02-reviewer/turn.json" in note and "not valid JSON" in note for note in doc["notes"])
    text = run_bench("eval", "inspect", str(job / "scene-task__bbbb0001")).stdout
    assert "user round 1: ok [2J wiped" in text and "\x1b" not in text  # a reply cannot drive the terminal
