"""What a monitor scores against (rubric, judge model, task), what it asks the judge, and when it alerts."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchflow.errors import ConfigError, TaskError
from benchflow.interop.turns import Turn
from benchflow.monitor.judge import alerts, prompt
from benchflow.monitor.rubric import DEFAULT_MODEL, resolve
from benchflow.monitor.score import MonitorOptions, prepare
from benchflow.monitor.transcript import Transcript

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
KEY = {"ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdef"}


def test_the_built_in_rubric_reads_output_action_and_reasoning() -> None:
    scoring = resolve()
    assert scoring.source == "builtin" and scoring.model == DEFAULT_MODEL and scoring.task is None
    assert [c["name"] for c in scoring.criteria] == ["task_completed", "safe_actions", "honest_report"]
    assert scoring.record()["sha256"].startswith("sha256:")


def test_a_task_with_an_llm_judge_lends_its_rubric_model_instruction_and_context() -> None:
    scoring = resolve(task_dir=TASKS / "judge-llm")
    assert scoring.source == "task:judge-llm" and scoring.notes == []
    assert [(c["name"], c["weight"]) for c in scoring.criteria] == [("correctness", 3.0), ("style", 1.0)]
    assert scoring.model == "claude-sonnet-4-6"
    assert scoring.task["name"] == "judge-llm" and scoring.task["verifier"] == "llm-judge"
    assert scoring.task["digest"].startswith("sha256:")
    text, _ = prompt(Transcript("acp", [Turn("user", message="hi")]), scoring)
    assert text.startswith("# Task given to the agent\n\nWrite a short report on the number 42")
    assert "# Context\n\nThe report must mention 42." in text
    assert 'name = "correctness"' in text  # the rubric as its author wrote it
    assert text.index("# Rubric") < text.index("# Trajectory") < text.index("# Your answer")
    assert text.rstrip().endswith("with one entry for each of these criteria: correctness, style.")


def test_a_task_whose_verifier_needs_a_sandbox_gives_its_instruction_and_a_note() -> None:
    scoring = resolve(task_dir=TASKS / "reward-pass", model="gpt-4o-mini")
    assert scoring.source == "builtin" and scoring.model == "gpt-4o-mini"
    assert scoring.instruction.startswith("Write the word `done`")
    assert scoring.notes == ["the task's verifier (test-script) needs a sandbox; scored with the built-in "
                             "monitor rubric instead"]


def test_a_rubric_file_wins_and_a_broken_one_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "rubric.yaml"
    good.write_text("criteria:\n  - {name: polite, description: says please, weight: 2}\n")
    scoring = resolve(rubric=good, task_dir=TASKS / "judge-llm")
    assert scoring.source == f"file:{good}" and [c["name"] for c in scoring.criteria] == ["polite"]
    bad = tmp_path / "rubric.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match=f"--rubric {bad}: rubric rubric.json does not parse"):
        resolve(rubric=bad)
    with pytest.raises(ConfigError, match="no such rubric file"):
        resolve(rubric=tmp_path / "missing.json")
    with pytest.raises(TaskError):
        resolve(task_dir=tmp_path)


def test_an_alert_names_the_reward_and_each_criterion_below_the_threshold() -> None:
    criteria = [{"name": "safe", "score": 0.2}, {"name": "done", "score": 1.0}]
    assert alerts(0.6, criteria, 0.5) == ["safe 0.20 < 0.5"]
    assert alerts(0.3, criteria, 0.5) == ["reward 0.30 < 0.5", "safe 0.20 < 0.5"]
    assert alerts(0.6, criteria, 0.0) == []


def test_options_are_checked_before_anything_runs() -> None:
    with pytest.raises(ConfigError, match="--alert-below 1.5: give a number from 0 to 1"):
        prepare(MonitorOptions(alert_below=1.5), KEY)
    with pytest.raises(ConfigError, match="--model claude-sonnet-4-6: no provider key for it in the environment"):
        prepare(MonitorOptions(), {})
    with pytest.raises(ConfigError, match="--model gemini-2.5-pro: no provider key"):
        prepare(MonitorOptions(model="gemini-2.5-pro"), {**KEY, "OPENAI_API_KEY": "sk-test-0123456789abcdef"})
    assert prepare(MonitorOptions(), KEY).model == DEFAULT_MODEL
