"""Scenes and the simulated user, without a sandbox: prompt composition, handoff, stop rules, checks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchflow.agents.trajectory import TrajectoryMerger
from benchflow.errors import TaskError
from benchflow.scenes.plan import compose
from benchflow.sim_user.user import SimulatedUser, system_prompt
from benchflow.tasks.scene_rules import handoff, scene_issues
from benchflow.tasks.user_plan import user_plan
from benchflow.tasks import load_task
from benchflow.tasks.capability import runtime_issues


def write_task(root: Path, front: str, body: str = "## prompt\nBuild it.\n") -> Path:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (root / "verifier").mkdir()
    (root / "verifier" / "test.sh").write_text("#!/bin/sh\n")
    (root / "task.md").write_text(f"---\nschema_version: '1.3'\n{front}---\n\n{body}")
    return root


ROLES = "agents:\n  roles:\n    writer: {agent: fake-acp}\n    reviewer: {agent: fake-acp, model: m2}\n"


class Caps:
    network_modes = frozenset({"public", "no-network", "allowlist"})
    gpus = False
    multi_service = True
    build_from_dockerfile = True
    resource_limits = True


def test_prompt_precedence_replace_and_append_in_order():
    parts = {"base": "B", "role": "R", "scene": None, "turn": None}
    assert compose(parts, "replace", ["base", "role", "scene", "turn"]) == "R"
    assert compose({**parts, "turn": "T", "scene": "S"}, "replace", []) == "T"
    assert compose({**parts, "role": None}, "replace", []) == "B"
    assert compose({**parts, "turn": "T"}, "append", ["turn", "base", "role"]) == "T\n\nB\n\nR"


def test_handoff_by_scene_name_or_the_only_team(tmp_path):
    task = load_task(write_task(tmp_path / "t", ROLES + "scenes:\n  - name: s\n    turns: [writer]\n"
                                "benchflow:\n  teams:\n    crew:\n      handoff: {trajectory_visibility: metadata}\n"))
    assert handoff(task, "s") == {"mode": "sequential", "workspace_visibility": "shared",
                                  "trajectory_visibility": "metadata"}
    assert scene_issues(task) == []


def test_a_scene_task_passes_the_runtime_check_and_an_unknown_handoff_does_not(tmp_path):
    good = load_task(write_task(tmp_path / "good", ROLES + "scenes:\n  - turns: [writer, reviewer]\n"
                                "user: {model: scripted, stop_rule: satisfied-or-2-rounds}\n"))
    assert runtime_issues(good, Caps(), "docker") == ([], [])
    bad = load_task(write_task(tmp_path / "bad", ROLES + "scenes:\n  - name: s\n    turns: [writer]\n"
                               "benchflow:\n  teams:\n    s:\n      handoff: {mode: parallel}\n"
                               "  prompt: {composition: merge}\n"))
    issues, _ = runtime_issues(bad, Caps(), "docker")
    assert any("handoff.mode 'parallel'" in i for i in issues)
    assert any("composition 'merge'" in i for i in issues)


def test_a_role_naming_an_agent_file_is_refused(tmp_path):
    task = load_task(write_task(tmp_path / "t", "agents:\n  roles:\n    w: {agent: ./evil.toml}\n"
                                "scenes:\n  - turns: [w]\n"))
    assert any("name a registry agent" in i for i in scene_issues(task))


def test_stop_rules_and_unknown_user_keys(tmp_path):
    task = load_task(write_task(tmp_path / "a", "user: {model: gpt-4o-mini, stop_rule: 4-rounds}\n",
                                "## prompt\nDo.\n\n## user-persona\nA busy user.\n"))
    plan = user_plan(task)
    assert (plan.max_rounds, plan.until_satisfied, plan.persona) == (4, False, "A busy user.")
    assert user_plan(load_task(write_task(tmp_path / "b", ""))) is None
    with pytest.raises(TaskError, match="stop_rule 'forever'"):
        user_plan(load_task(write_task(tmp_path / "c", "user: {stop_rule: forever}\n")))
    with pytest.raises(TaskError, match="user.mood"):
        user_plan(load_task(write_task(tmp_path / "d", "user: {mood: grumpy}\n")))


def test_private_facts_reach_the_user_model_only_through_its_system_prompt(tmp_path):
    task = load_task(write_task(tmp_path / "t", "user: {model: gpt-4o-mini, private_facts: {pin: '4417'}}\n",
                                "## prompt\nOpen the door.\n\n## user-persona\nThe owner.\n"))
    assert "4417" in system_prompt(user_plan(task)) and "4417" not in task.prompt


def test_scripted_user_answers_from_its_script_until_satisfied_or_out_of_rounds(tmp_path):
    def plan(front: str):
        return user_plan(load_task(write_task(tmp_path / str(len(list(tmp_path.iterdir()))), front)))

    user = SimulatedUser(plan("user: {model: scripted, script: [more please, SATISFIED, never]}\n"),
                         record=tmp_path / "x.jsonl")
    assert asyncio.run(user("draft 1")) == "more please"
    assert asyncio.run(user("draft 2")) is None
    assert user.summary()["stopped_by"] == "satisfied" and len(user.rounds) == 1
    facts = SimulatedUser(plan("user: {stop_rule: 2-rounds, private_facts: {a: 1, b: 2, c: 3}}\n"),
                          record=tmp_path / "y.jsonl")
    answers = [asyncio.run(facts("?")) for _ in range(3)]
    assert answers == ["a: 1", "b: 2", None] and facts.summary()["stopped_by"] == "rounds"


def test_last_reply_is_the_agent_text_since_the_last_prompt():
    merger = TrajectoryMerger()
    for event in ({"type": "user_message", "text": "p1"}, {"type": "agent_message", "text": "old"},
                  {"type": "user_message", "text": "p2"}, {"type": "agent_message", "text": "What is "},
                  {"type": "tool_call", "tool_call_id": "t"}, {"type": "agent_message", "text": "the pin?"}):
        merger.add(event)
    assert merger.last_reply() == "What is the pin?"


def test_the_run_card_refuses_checkpoints_on_scenes_and_a_native_harness_for_the_user(tmp_path):
    from benchflow.scenes.plan import run_issues
    from benchflow.jobs.spec import RunSpec

    task = load_task(write_task(tmp_path / "t", ROLES + "scenes:\n  - turns: [writer]\nuser: {model: scripted}\n"))
    issues, warnings = run_issues(task, RunSpec(agent="fake-acp", checkpoints={"after": "every-prompt"},  # plays writer
                                                harness="native", prompts=["@instruction"]))
    assert [i.split(":")[0] for i in issues] == ["--checkpoints", "user"]
    assert warnings and "--prompt" in warnings[0]
    assert run_issues(task, RunSpec(agent="oracle", checkpoints={"after": "every-prompt"})) == ([], [])
    assert run_issues(task, RunSpec(agent="fake-acp")) == ([], [])


def test_run_config_scenes_replace_the_task_scenes_and_keep_its_role_prompts(tmp_path):
    from benchflow.scenes.run_config import parse_run_scenes
    from benchflow.scenes.plan import with_run_scenes

    task = load_task(write_task(tmp_path / "t", ROLES + "scenes:\n  - name: s\n    turns: [writer]\n",
                                "## prompt\nBuild it.\n\n## role:writer\nYou write.\n"))
    scenes = parse_run_scenes("run.yaml", [{"name": "pair", "roles": [
        {"name": "writer", "agent": "./mine.toml", "model": "m1"}, {"name": "critic", "agent": "codex-acp"}]}])
    view = with_run_scenes(task, scenes)
    assert [s["name"] for s in view.scenes] == ["pair"]
    assert view.scenes[0]["turns"] == [{"role": "writer", "prompt": None}, {"role": "critic", "prompt": None}]
    assert view.roles["writer"] == {**task.roles["writer"], "agent": "./mine.toml", "model": "m1", "env": {}}
    assert view.roles["writer"]["prompt"] == "You write." and view.roles["critic"]["agent"] == "codex-acp"
    assert with_run_scenes(task, None) is task


@pytest.mark.parametrize("scenes, message", [
    ([{"roles": [{"name": "a", "agent": "x"}], "turns": ["b"]}], "scenes[0]: a turn names role 'b'"),
    ([{"roles": [{"name": "a", "agent": "x", "colour": 1}]}], "scenes[0].roles.0.colour"),
    ("writer", "scenes: expected a list"),
])
def test_bad_run_config_scenes_are_one_line_config_errors(scenes, message):
    from benchflow.errors import ConfigError
    from benchflow.scenes.run_config import parse_run_scenes

    with pytest.raises(ConfigError) as caught:
        parse_run_scenes("run.yaml", scenes)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_run_config_role_key_is_not_stored_with_the_run():
    from benchflow.scenes.run_config import parse_run_scenes
    from benchflow.jobs.spec import RunSpec

    key = "sk-proj-" + "k" * 40
    scenes = parse_run_scenes("run.yaml", [{"roles": [{"name": "a", "agent": "x",
                                                       "env": {"OPENAI_API_KEY": key, "STYLE": "terse"}}]}])
    stored = RunSpec(scenes=scenes).redacted()
    assert stored["scenes"][0]["roles"][0]["env"] == {"STYLE": "terse"}
    assert key not in str(stored)
