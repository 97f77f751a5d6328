"""``bench eval smoke`` with a credentialed test-double agent from a user registry folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.integration.test_agent_pipeline import fake_agent_file


def stages(stdout: str) -> dict[str, str]:
    """``{stage: "ok 1.2s ..."/"FAIL ..."/"skipped"}`` from smoke's ``fake-acp  <stage>  <result>`` lines."""
    found = {}
    for line in stdout.splitlines():
        name, sep, rest = line.partition("  ")
        stage, sep2, result = rest.partition("  ")
        if name == "fake-acp" and sep and sep2:
            found[stage] = result
    return found


@pytest.mark.docker
def test_smoke_runs_each_credentialed_agent_and_gates_on_reward(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    def agent(command: str) -> None:
        script = {"prompts": [[{"op": "tool", "id": "w", "run": command}]]}
        toml = fake_agent_file(tmp_path, api_key_env=["FAKE_SMOKE_KEY"], env={"FAKE_ACP_SCRIPT": json.dumps(script)})
        (agents / "fake-acp.toml").write_text(toml.read_text())

    agent("printf 'Hello, world!\\n' > hello.txt")
    env = {"BENCHFLOW_AGENTS_DIR": str(agents), "FAKE_SMOKE_KEY": "present"}
    done = run_bench("eval", "smoke", "--jobs-dir", str(tmp_path / "smoke"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok fake-acp" in done.stdout and "reward 1" in done.stdout
    assert "1/1 agents scored 1.0" in done.stdout
    passed = stages(done.stdout)
    assert list(passed) == ["install", "launch", "handshake", "first model call"], done.stdout
    assert all(passed[s].startswith("ok ") for s in ("install", "launch", "handshake")), passed
    assert passed["first model call"] == "not exercised (the agent reported no model usage)"

    agent("true")
    failed = run_bench("eval", "smoke", "--agent", "fake-acp", "--jobs-dir", str(tmp_path / "smoke"), env=env)
    assert failed.returncode == 1 and "FAIL fake-acp" in failed.stdout

    broken = fake_agent_file(tmp_path, api_key_env=["FAKE_SMOKE_KEY"], launch="sh -c 'exit 3'")
    (agents / "fake-acp.toml").write_text(broken.read_text())
    crashed = run_bench("eval", "smoke", "--agent", "fake-acp", "--jobs-dir", str(tmp_path / "smoke"), env=env)
    assert crashed.returncode == 1
    lines = stages(crashed.stdout)
    assert lines["launch"].startswith("FAIL pipe_closed"), crashed.stdout
    assert lines["handshake"] == lines["first model call"] == "skipped"
    assert "FAIL fake-acp  reward n/a" in crashed.stdout and "launch failed" in crashed.stdout


@pytest.mark.docker
def test_smoke_reports_the_first_model_call_through_the_fake_upstream(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    steps = [{"op": "ask_model", "api": "openai", "prompt": "say hello"},
             {"op": "tool", "id": "w", "run": "printf 'Hello, world!\\n' > hello.txt"}]
    toml = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [steps]})})
    (agents / "fake-acp.toml").write_text(toml.read_text())
    with FakeModelServer() as upstream:
        done = run_bench("eval", "smoke", "--agent", "fake-acp=gpt-4o-mini", "--jobs-dir", str(tmp_path / "smoke"),
                         env={"BENCHFLOW_AGENTS_DIR": str(agents), "OPENAI_API_KEY": "sk-test-" + "u" * 30,
                              "OPENAI_BASE_URL": upstream.url + "/v1"})
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(upstream.requests) == 1
    lines = stages(done.stdout)
    assert lines["first model call"].startswith("ok ") and "input tokens" in lines["first model call"], done.stdout


def test_smoke_with_no_credentialed_agent_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "agents"
    empty.mkdir()
    env = {k: "" for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
                           "OPENROUTER_API_KEY", "DASHSCOPE_API_KEY", "LLM_API_KEY")}
    done = run_bench("eval", "smoke", "--sandbox", "local", env={**env, "BENCHFLOW_AGENTS_DIR": str(empty),
                                                                  "HOME": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: no agent has a credential on this machine (see bench agents); name one with --agent NAME[=MODEL]"]
