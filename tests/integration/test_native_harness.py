"""``bench run --harness native`` end to end in Docker, with CLI test doubles.

The agents are user agent files whose ``native`` section runs
``tests/doubles/fake_claude_cli.py`` / ``fake_codex_cli.py`` (scripts that
print the real CLIs' headless JSON event streams), installed into a
``no-network`` python task image; model calls go to
``tests/doubles/fake_model_server.py`` on loopback through the job's gateway.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.taskgen import make_task

PYTHON_IMAGE = "FROM benchflow/python:3.11-bookworm\nWORKDIR /app\n"
UPSTREAM_KEY = "sk-ant-api03-UPSTREAMSECRET" + "q" * 30
ANSWER_TEST = ('[ "$(cat /app/answer.txt)" = 42 ] && echo 1 > /logs/verifier/reward.txt '
               '|| echo 0 > /logs/verifier/reward.txt')
COMMANDS = {
    "claude-stream-json": ("python3 /opt/benchflow/fake_claude_cli.py -p --output-format stream-json --verbose "
                           '${BENCHFLOW_NATIVE_MODEL:+--model "$BENCHFLOW_NATIVE_MODEL"} '
                           '${BENCHFLOW_NATIVE_SESSION:+--resume "$BENCHFLOW_NATIVE_SESSION"}'),
    "codex-exec-json": ("python3 /opt/benchflow/fake_codex_cli.py exec --json --skip-git-repo-check "
                        '${BENCHFLOW_NATIVE_MODEL:+-m "$BENCHFLOW_NATIVE_MODEL"} '
                        '${BENCHFLOW_NATIVE_SESSION:+resume "$BENCHFLOW_NATIVE_SESSION"} -'),
}


def native_agent_file(tmp: Path, fmt: str) -> Path:
    """A user agent file with only a native mode, installing both CLI doubles (one cached layer)."""
    import tomli_w

    script = "mkdir -p /opt/benchflow\n"
    for name in ("fake_claude_cli.py", "fake_codex_cli.py"):
        source = (ROOT / "tests" / "doubles" / name).read_text()
        script += f"cat > /opt/benchflow/{name} <<'BENCHFLOW_EOF'\n{source}\nBENCHFLOW_EOF\n"
    api = {"claude-stream-json": ("anthropic-messages", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"),
           "codex-exec-json": ("openai-responses", "OPENAI_BASE_URL", "OPENAI_API_KEY")}[fmt]
    config = {"name": f"fake-native-{fmt.split('-')[0]}", "description": "TEST DOUBLE: a headless agent CLI",
              "protocol": "native", "launch": COMMANDS[fmt], "install": {"kind": "script", "script": script},
              "gateway": {"api": api[0], "base_url_env": [api[1]], "api_key_env": [api[2]]},
              "model": {"via": "none"}, "native": {"format": fmt, "command": COMMANDS[fmt]}}
    path = tmp / f"{config['name']}.toml"
    path.write_text(tomli_w.dumps(config))
    return path


def run_native(tmp: Path, fmt: str, script: list[list[dict]], *extra: str, agent_timeout: float = 60,
               env: dict[str, str] | None = None) -> tuple[dict, Path, str]:
    """One ``bench run --harness native`` on a fresh task; returns result.json, the trial folder and stdout."""
    make_task(tmp / "tasks", "native", dockerfile=PYTHON_IMAGE, agent_timeout=agent_timeout, test=ANSWER_TEST)
    done = run_bench("run", str(tmp / "tasks"), "-s", "docker", "--jobs-dir", str(tmp / "jobs"),
                     "-a", str(native_agent_file(tmp, fmt)), "--harness", "native", "--retry-attempts", "0",
                     "--agent-env", f"FAKE_CLI_SCRIPT={json.dumps({'prompts': script})}", *extra, env=env or {})
    assert "Traceback" not in done.stderr, done.stderr
    trial = next((tmp / "jobs").rglob("result.json")).parent
    return json.loads((trial / "result.json").read_text()), trial, done.stdout + done.stderr


def events_of(trial: Path) -> list[dict]:
    return [json.loads(line) for line in (trial / "trajectory" / "acp_trajectory.jsonl").read_text().splitlines()]


@pytest.mark.docker
def test_claude_cli_two_prompts_through_the_gateway(tmp_path: Path) -> None:
    first = [{"op": "ask_model", "prompt": "six times seven?"}, {"op": "thought", "text": "write it down"},
             {"op": "tool", "write": {"path": "answer.txt", "content": "42"}}, {"op": "stderr", "text": "cli note"},
             {"op": "echo_prompt"}]
    with FakeModelServer() as upstream:
        result, trial, output = run_native(
            tmp_path, "claude-stream-json", [first, [{"op": "echo_prompt"}]], "-m", "claude-haiku-4-5",
            "--prompt", "write the answer", "--prompt", "check it",
            env={"ANTHROPIC_API_KEY": UPSTREAM_KEY, "ANTHROPIC_BASE_URL": upstream.url})
        assert len(upstream.requests) == 1, output
    assert result["rewards"]["reward"] == 1.0, output
    assert result["error"] is None and result["n_tool_calls"] == 1
    assert json.loads((trial / "config.json").read_text())["harness_mode"] == "native"
    events = events_of(trial)
    assert [e["type"] for e in events] == ["user_message", "agent_message", "agent_thought", "tool_call",
                                           "agent_message", "user_message", "agent_message"]
    assert events[3]["status"] == "completed" and events[3]["kind"] == "edit"
    assert events[6]["text"].startswith("prompt 2: check it")  # the second prompt resumed the session
    assert result["agent_result"]["usage_source"] == "provider_response"
    assert result["agent_result"]["n_input_tokens"] > 0
    assert "cli note" in (trial / "agent" / "fake_native_claude.txt").read_text()
    exchanges = (trial / "trajectory" / "llm_trajectory.jsonl").read_text().splitlines()
    assert len(exchanges) == 1
    blob = "".join(p.read_text(errors="replace") for p in (tmp_path / "jobs").rglob("*") if p.is_file())
    assert UPSTREAM_KEY not in blob


@pytest.mark.docker
def test_codex_cli_wall_clock_timeout_is_recorded_and_the_work_scored(tmp_path: Path) -> None:
    script = [[{"op": "tool", "write": {"path": "answer.txt", "content": "42"}}, {"op": "tool_start"}]]
    result, trial, output = run_native(tmp_path, "codex-exec-json", script, agent_timeout=4)
    assert result["error_category"] == "timeout", output
    assert result["agent_timeout_info"]["timeout_sec"] == 4
    assert result["agent_timeout_info"]["pending_tool_call_ids"] == ["p1:item_1"]
    assert result["rewards"]["reward"] == 1.0  # the verifier still scores what was done
    events = events_of(trial)
    assert [e["type"] for e in events] == ["user_message", "tool_call", "tool_call", "agent_timeout"]
    assert [e["status"] for e in events if e["type"] == "tool_call"] == ["completed", "in_progress"]


@pytest.mark.docker
def test_a_cli_that_exits_non_zero_is_categorised(tmp_path: Path) -> None:
    script = [[{"op": "message", "text": "starting"}, {"op": "stderr", "text": "fatal: segfault"},
               {"op": "exit", "code": 3}]]
    result, trial, output = run_native(tmp_path, "claude-stream-json", script)
    assert result["error_category"] == "pipe_closed", output
    assert "exited with code 3" in result["error"]
    assert "fatal: segfault" in (trial / "agent" / "fake_native_claude.txt").read_text()
    assert [e["type"] for e in events_of(trial)] == ["user_message", "agent_message"]
    assert result["rewards"]["reward"] == 0.0
