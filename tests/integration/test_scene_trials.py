"""Multi-role scenes and the simulated user, end to end with the fake ACP agent in Docker.

The fake agent (``tests/doubles/fake_acp_agent.py``) plays both roles of a scene,
each with its own script from the role's ``env``; the simulated user's model is
the fake upstream (``tests/doubles/fake_model_server.py``) behind the job's gateway.
Each verifier passes only when the feature really ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.integration.test_agent_pipeline import (
    PYTHON_IMAGE,
    UPSTREAM_KEY,
    fake_agent_file,
)


def scene_task(root: Path, front: dict, body: str, check: str) -> Path:
    """A task whose verifier runs the python ``check`` (it raises on failure) against /app."""
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text(PYTHON_IMAGE)
    (root / "verifier").mkdir()
    (root / "verifier" / "check.py").write_text(check)
    (root / "verifier" / "test.sh").write_text(
        "#!/bin/sh\nmkdir -p /logs/verifier\ncd /app && python3 /verifier/check.py "
        "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    front = {"schema_version": "1.3", "agent": {"timeout_sec": 60}, "verifier": {"timeout_sec": 30},
             "sandbox": {"network_mode": "no-network"}, **front}
    (root / "task.md").write_text(f"---\n{yaml.safe_dump(front)}---\n\n{body}")
    return root


def script(*steps: dict) -> str:
    return json.dumps({"prompts": [list(steps)]})


SCENE_CHECK = """
import json
assert open("draft.txt").read() == "draft\\nreviewed\\n", open("draft.txt").read()
writer, reviewer = json.load(open("writer.json")), json.load(open("reviewer.json"))
assert len(writer) == 1 and len(reviewer) == 1
assert "Produce a reviewed draft." in writer[0] and "You write the draft." in writer[0]
assert "You review" not in writer[0] and "Earlier turns" not in writer[0]
assert "You review drafts." in reviewer[0] and "Append a line 'reviewed'." in reviewer[0]
assert "role writer (agent fake-acp) finished" in reviewer[0]
"""


@pytest.mark.docker
def test_a_two_role_scene_runs_each_turn_with_its_own_prompt_in_one_workspace(tmp_path: Path) -> None:
    writer = script({"op": "save_history", "path": "writer.json"},
                    {"op": "tool", "id": "w", "write": {"path": "draft.txt", "content": "draft\n"}})
    reviewer = script({"op": "save_history", "path": "reviewer.json"},
                      {"op": "tool", "id": "r", "run": "echo reviewed >> draft.txt"})
    front = {"agents": {"roles": {"writer": {"agent": "fake-acp", "env": {"FAKE_ACP_SCRIPT": writer}},
                                  "reviewer": {"agent": "fake-reviewer", "timeout_sec": 90,
                                               "env": {"FAKE_ACP_SCRIPT": reviewer}}}},
             "scenes": [{"name": "review", "turns": ["writer", {"role": "reviewer",
                                                                "prompt": "Append a line 'reviewed'."}]}],
             "benchflow": {"prompt": {"composition": "append", "order": ["base", "role", "turn"]},
                           "teams": {"review": {"handoff": {"trajectory_visibility": "metadata"}}}}}
    body = ("## prompt\n\nProduce a reviewed draft.\n\n## role:writer\n\nYou write the draft.\n\n"
            "## role:reviewer\n\nYou review drafts.\n")
    scene_task(tmp_path / "tasks" / "scene", front, body, SCENE_CHECK)
    jobs = tmp_path / "jobs"
    (tmp_path / "agents").mkdir()  # the reviewer is another registry agent, installed beside the run's
    fake_agent_file(tmp_path / "agents", name="fake-reviewer")
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                     "-a", str(fake_agent_file(tmp_path)), "--retry-attempts", "0",
                     env={"BENCHFLOW_AGENTS_DIR": str(tmp_path / "agents")})
    assert done.returncode == 0, done.stderr + done.stdout
    trial = next(jobs.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["error"] is None and result["rewards"]["reward"] == 1.0, result
    config = json.loads((trial / "config.json").read_text())
    assert config["scenes"] == [{
        "name": "review", "skills_dir": None,
        "roles": [{"name": "writer", "agent": "fake-acp", "model": None, "reasoning_effort": None, "timeout_sec": None,
                   "idle_timeout_sec": None, "skills_dir": None, "capabilities": [], "env_keys": ["FAKE_ACP_SCRIPT"]},
                  {"name": "reviewer", "agent": "fake-reviewer", "model": None, "reasoning_effort": None,
                   "timeout_sec": 90, "idle_timeout_sec": None, "skills_dir": None, "capabilities": [],
                   "env_keys": ["FAKE_ACP_SCRIPT"]}],
        "turns": [{"role": "writer", "has_prompt": False}, {"role": "reviewer", "has_prompt": True}]}]
    turns = [json.loads((trial / "turns" / name / "turn.json").read_text()) for name in ("01-writer", "02-reviewer")]
    assert [(t["scene"], t["role"], t["agent"], t["status"]) for t in turns] == [
        ("review", "writer", "fake-acp", "finished"), ("review", "reviewer", "fake-reviewer", "finished")]
    assert (trial / "turns" / "02-reviewer" / "agent" / "fake_reviewer.txt").is_file()
    assert not (trial / "turns" / "02-reviewer" / "agent" / "install-stdout.txt").exists()  # its own image layer
    own = [json.loads(line) for line in (trial / "turns" / "02-reviewer" / "trajectory" / "acp_trajectory.jsonl")
           .read_text().splitlines()]
    assert [e["text"] for e in own if e["type"] == "user_message"] == [turns[1]["prompt"]]
    events = [json.loads(line) for line in (trial / "trajectory" / "acp_trajectory.jsonl").read_text().splitlines()]
    assert [e["role"] for e in events if e["type"] == "turn_start"] == ["writer", "reviewer"]
    assert result["n_tool_calls"] == 2


USER_CHECK = """
import json
history = json.load(open("history.json"))
assert len(history) == 2, history
assert "4417" not in history[0] and "4417" in history[1]
assert "4417" in open("code.txt").read()
"""


@pytest.mark.docker
def test_the_simulated_user_gives_the_private_fact_the_agent_needs(tmp_path: Path) -> None:
    steps = json.dumps({"prompts": [
        [{"op": "message", "text": "Which door code should I use?"}],
        [{"op": "save_history", "path": "history.json"},
         {"op": "tool", "id": "c", "run": "python3 -c \"import json; open('code.txt','w')"
                                          ".write(json.load(open('history.json'))[-1])\""},
         {"op": "message", "text": "Done, the door is open."}],
        [{"op": "message", "text": "Anything else?"}]]})
    front = {"user": {"model": "gpt-4o-mini", "stop_rule": "satisfied-or-2-rounds",
                      "private_facts": {"door_code": "4417"}}}
    body = "## prompt\n\nOpen the door; ask me for anything you need.\n\n## user-persona\n\nYou own the house.\n"
    scene_task(tmp_path / "tasks" / "door", front, body, USER_CHECK)
    jobs = tmp_path / "jobs"
    with FakeModelServer() as upstream:
        upstream.content = "The door code is 4417."
        done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                         "-a", str(fake_agent_file(tmp_path)), "-m", "gpt-4o-mini", "--retry-attempts", "0",
                         "--agent-env", f"FAKE_ACP_SCRIPT={steps}",
                         env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"})
        assert done.returncode == 0, done.stderr + done.stdout
        asked = [r for r in upstream.requests if r["path"].endswith("/chat/completions")]
    assert len(asked) == 2  # two rounds: the stop rule ended the conversation
    system = asked[0]["body"]["messages"][0]["content"]
    assert "You own the house." in system and "door_code: 4417" in system
    assert "Which door code should I use?" in asked[0]["body"]["messages"][1]["content"]
    assert asked[0]["headers"]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    trial = next(jobs.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["error"] is None and result["rewards"]["reward"] == 1.0, result
    assert result["agent_result"]["n_prompts"] == 3
    user = json.loads((trial / "simulated-user.json").read_text())
    assert len(user["rounds"]) == 2 and user["stopped_by"] == "rounds"
    assert all(r["usage"]["n_input_tokens"] > 0 for r in user["rounds"])  # metered by the gateway
    exchanges = (trial / "trajectory" / "user_llm_trajectory.jsonl").read_text().splitlines()
    assert len(exchanges) == 2
    assert "4417" not in (trial / "prompts.json").read_text()
    blob = "".join(p.read_text(errors="replace") for p in jobs.rglob("*") if p.is_file())
    assert UPSTREAM_KEY not in blob


def test_a_turn_naming_an_undeclared_role_is_a_one_line_error(tmp_path: Path) -> None:
    scene_task(tmp_path / "tasks" / "bad", {"agents": {"roles": {"writer": {"agent": "fake-acp"}}},
                                            "scenes": [{"name": "s", "turns": ["writer", "editor"]}]},
               "## prompt\n\nWrite.\n", "")
    done = run_bench("run", str(tmp_path / "tasks" / "bad"), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "names role 'editor'" in lines[0] and "agents.roles" in lines[0], done.stderr
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").rglob("config.json"))


@pytest.mark.docker
def test_a_run_config_gives_the_scene_to_a_task_without_one(tmp_path: Path) -> None:
    agent = str(fake_agent_file(tmp_path))
    first = script({"op": "save_history", "path": "first.json"},
                   {"op": "tool", "id": "a", "run": "echo one >> log.txt"})
    second = script({"op": "save_history", "path": "second.json"},
                    {"op": "tool", "id": "b", "run": "echo two >> log.txt"})
    check = ('import json\nassert open("log.txt").read() == "one\\ntwo\\n"\n'
             'assert json.load(open("first.json")) == ["Start the log."]\n'
             'assert json.load(open("second.json")) == ["Finish the log."]\n')
    scene_task(tmp_path / "tasks" / "plain", {}, "## prompt\n\nKeep a log.\n", check)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"agent": agent, "scenes": [{"name": "pair", "roles": [
        {"name": "first", "agent": agent, "env": {"FAKE_ACP_SCRIPT": first}},
        {"name": "second", "agent": agent, "env": {"FAKE_ACP_SCRIPT": second}}],
        "turns": [{"role": "first", "prompt": "Start the log."}, {"role": "second", "prompt": "Finish the log."}]}]}))
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--config", str(config),
                     "--retry-attempts", "0")
    assert done.returncode == 0, done.stderr + done.stdout
    trial = next(jobs.rglob("result.json")).parent
    assert json.loads((trial / "result.json").read_text())["rewards"]["reward"] == 1.0
    recorded = json.loads((trial / "config.json").read_text())["scenes"]
    assert [r["name"] for r in recorded[0]["roles"]] == ["first", "second"]
    assert recorded[0]["turns"] == [{"role": "first", "has_prompt": True}, {"role": "second", "has_prompt": True}]


@pytest.mark.docker
def test_a_failed_turn_ends_the_scene_and_the_workspace_is_still_scored(tmp_path: Path) -> None:
    failing = script({"op": "tool", "id": "w", "write": {"path": "draft.txt", "content": "half\n"}}, {"op": "error"})
    never = script({"op": "tool", "id": "r", "write": {"path": "late.txt", "content": "x"}})
    front = {"agents": {"roles": {"writer": {"agent": "fake-acp", "env": {"FAKE_ACP_SCRIPT": failing}},
                                  "reviewer": {"agent": "fake-acp", "env": {"FAKE_ACP_SCRIPT": never}}}},
             "scenes": [{"name": "review", "turns": ["writer", "reviewer"]}]}
    check = 'import os\nassert open("draft.txt").read() == "half\\n" and not os.path.exists("late.txt")\n'
    scene_task(tmp_path / "tasks" / "broken", front, "## prompt\n\nWrite.\n", check)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                     "-a", str(fake_agent_file(tmp_path)), "--retry-attempts", "0")
    assert "Traceback" not in done.stderr, done.stderr
    trial = next(jobs.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["error"].startswith("scene review turn 1 (role writer): ACP error"), result["error"]
    assert result["rewards"]["reward"] == 1.0  # the verifier saw the writer's half draft and no reviewer work
    statuses = [json.loads((trial / "turns" / n / "turn.json").read_text())["status"]
                for n in ("01-writer", "02-reviewer")]
    assert statuses == ["failed", "not_run"]
