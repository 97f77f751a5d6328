"""A real agent pipeline end to end, with test doubles that speak the real protocols.

The agent is ``tests/doubles/fake_acp_agent.py`` (a scripted ACP agent over
stdio) installed into a ``no-network`` sandbox from a user agent file; its model
calls go to ``tests/doubles/fake_model_server.py`` (an OpenAI-compatible
upstream on loopback) through the job's model gateway and the socket bridge.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.taskgen import PASS_IF_HELLO, make_task

PYTHON_IMAGE = "FROM benchflow/python:3.11-bookworm\nWORKDIR /app\n"
UPSTREAM_KEY = "sk-proj-UPSTREAMSECRET" + "q" * 30


def fake_agent_file(tmp: Path, **extra: object) -> Path:
    """A user agent file installing the fake ACP agent (the script is embedded in the install recipe)."""
    import tomli_w

    source = (ROOT / "tests" / "doubles" / "fake_acp_agent.py").read_text()
    # The agent needs python3; a task image without it gets it from the distribution at install time
    # (the install runs as a cached image build with the host network).
    script = ("command -v python3 >/dev/null || { apt-get update -qq && apt-get install -y -qq python3-minimal; }\n"
              f"mkdir -p /opt/benchflow && cat > /opt/benchflow/fake_acp_agent.py <<'BENCHFLOW_EOF'\n{source}\nBENCHFLOW_EOF\n")
    config = {"name": "fake-acp", "description": "TEST DOUBLE: scripted ACP agent", "protocol": "acp",
              "launch": "python3 /opt/benchflow/fake_acp_agent.py",
              "install": {"kind": "script", "script": script},
              "gateway": {"api": "openai-completions", "base_url_env": ["OPENAI_BASE_URL"],
                          "api_key_env": ["OPENAI_API_KEY"], "model_env": ["OPENAI_MODEL"]},
              "model": {"via": "env"}, **extra}
    toml = tmp / "fake-agent.toml"
    toml.write_text(tomli_w.dumps(config))
    return toml


@pytest.mark.docker
def test_acp_agent_reaches_the_model_only_through_the_gateway(tmp_path: Path) -> None:
    with FakeModelServer() as upstream:
        direct = upstream.url + "/v1/models"
        steps = [
            {"op": "ask_model", "api": "openai", "prompt": "what is six times seven?"},
            {"op": "tool", "id": "tc_write", "write": {"path": "answer.txt", "content": "42"}},
            {"op": "tool", "id": "tc_net", "run": f"python3 -c \"import urllib.request; urllib.request.urlopen('{direct}', timeout=3)\" "
                                  "&& echo reachable > net.txt || echo unreachable > net.txt"},
            {"op": "message", "text": "done"},
        ]
        make_task(tmp_path / "tasks", "ask", dockerfile=PYTHON_IMAGE, network="no-network",
                  test='[ "$(cat /app/answer.txt)" = 42 ] && [ "$(cat /app/net.txt)" = unreachable ] '
                       '&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')
        jobs = tmp_path / "jobs"
        done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                         "-a", str(fake_agent_file(tmp_path)), "-m", "gpt-4o-mini",
                         "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps({'prompts': [steps]})}",
                         env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"})
        assert done.returncode == 0, done.stderr + done.stdout
        assert len(upstream.requests) == 1
        assert upstream.requests[0]["headers"]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    trial = next(p for p in jobs.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0, "the agent's work, or the no-network isolation, failed"
    usage = result["agent_result"]
    assert usage["n_input_tokens"] > 0 and usage["n_output_tokens"] > 0
    assert usage["usage_source"] == "provider_response"
    assert usage["cost_usd"] is not None and usage["cost_usd"] > 0
    exchanges = [json.loads(line) for line in (trial / "trajectory" / "llm_trajectory.jsonl").read_text().splitlines()]
    assert len(exchanges) == 1 and exchanges[0]["response"]["status_code"] == 200
    events = [json.loads(line) for line in (trial / "trajectory" / "acp_trajectory.jsonl").read_text().splitlines()]
    assert [e["status"] for e in events if e["type"] == "tool_call"] == ["completed", "completed"]
    assert any(e["type"] == "agent_message" and "done" in e["text"] for e in events)
    assert result["n_tool_calls"] == 2
    blob = "".join(p.read_text(errors="replace") for p in jobs.rglob("*") if p.is_file())
    assert UPSTREAM_KEY not in blob


@pytest.mark.docker
def test_agent_install_is_a_cached_layer_unless_fresh_install(tmp_path: Path) -> None:
    steps = [{"op": "tool", "id": "w", "write": {"path": "answer.txt", "content": "42"}}]
    make_task(tmp_path / "tasks", "layered", dockerfile=PYTHON_IMAGE,
              test='[ "$(cat /app/answer.txt)" = 42 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')
    agent = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [steps]}),
                                           "LAYER_TEST": str(tmp_path)})  # a key of its own
    def run(*extra: str) -> Path:
        jobs = tmp_path / "jobs"
        done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--fresh",
                         "-a", str(agent), *extra)
        assert done.returncode == 0, done.stderr
        newest = sorted(p for p in jobs.iterdir() if p.is_dir())[-1]
        return next(newest.glob("layered__*"))

    first = run()
    assert "benchflow-install.sh" in (first / "agent" / "install-stdout.txt").read_text()
    second = run()
    assert not (second / "agent" / "install-stdout.txt").exists()  # started from the cached layer
    fresh = run("--fresh-install")
    assert (fresh / "agent" / "install-stdout.txt").is_file()
    for trial in (first, second, fresh):
        assert json.loads((trial / "result.json").read_text())["rewards"]["reward"] == 1.0


def _run_fake(tmp_path: Path, steps: list[dict], *extra: str, agent_timeout: float | None = 60) -> dict:
    """Run the fake agent on a fresh python-image task; returns the trial's result.json."""
    make_task(tmp_path / "tasks", "budget", dockerfile=PYTHON_IMAGE, agent_timeout=agent_timeout,
              test='[ -f /app/answer.txt ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')
    agent = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [steps]})})
    with FakeModelServer() as upstream:
        done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"),
                         "-a", str(agent), "-m", "gpt-4o-mini", "--retry-attempts", "0", *extra,
                         env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1"})
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(next((tmp_path / "jobs").rglob("result.json")).read_text())


@pytest.mark.docker
def test_turn_budget_refuses_the_next_model_call_and_the_work_is_still_graded(tmp_path: Path) -> None:
    # After its one allowed call the agent would go on for two minutes: the spent budget stops it.
    steps = [{"op": "tool", "id": "w", "write": {"path": "answer.txt", "content": "early"}},
             {"op": "ask_model", "api": "openai"}, {"op": "sleep", "sec": 120}]
    result = _run_fake(tmp_path, steps, "--turn-budget", "1")
    assert result["budget_stop"] == "turn_budget"
    assert result["error"] is None and result["timing"]["agent_execution"] < 60
    assert result["agent_result"]["n_input_tokens"] > 0
    assert result["rewards"]["reward"] == 1.0  # what the agent did before the refusal is graded


@pytest.mark.docker
def test_wall_clock_and_idle_timeouts_stop_the_agent_and_the_verifier_still_scores(tmp_path: Path) -> None:
    wall = _run_fake(tmp_path / "wall", [{"op": "tool", "id": "w", "write": {"path": "answer.txt", "content": "x"}},
                                         {"op": "sleep", "sec": 120}], agent_timeout=3)
    assert wall["error_category"] == "timeout" and wall["rewards"]["reward"] == 1.0
    assert wall["agent_timeout_info"]["timeout_sec"] == 3
    idle = _run_fake(tmp_path / "idle", [{"op": "hang"}], "--agent-idle-timeout", "2s", agent_timeout=120)
    assert idle["error_category"] == "idle_timeout" and idle["idle_timeout_info"]["idle_timeout_sec"] == 2
    assert idle["rewards"] == {"reward": 0.0} or idle["rewards"]["reward"] == 0.0


@pytest.mark.docker
def test_a_failed_agent_install_is_install_failure_with_its_log(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "broken-install", dockerfile=PYTHON_IMAGE, test=PASS_IF_HELLO)
    agent = fake_agent_file(tmp_path, install={"kind": "script", "script": "echo no-such-package >&2; exit 7"})
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"),
                     "-a", str(agent), "--retry-attempts", "0")
    assert done.returncode == 1, done.stderr
    trial = next((tmp_path / "jobs").rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["error_category"] == "install_failure" and result["rewards"] is None
    assert "no-such-package" in (trial / "agent" / "install-stdout.txt").read_text()
