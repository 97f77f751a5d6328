"""The ACP runtime end to end against the fake ACP agent (a test double) in a real Docker sandbox.

The fake agent is copied into the sandbox with ``put`` and launched by a
registry entry read from a user ``.toml`` file, exactly as a user agent would be.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from benchflow.agents.acp_runtime import AcpAgent
from benchflow.agents.base import AgentContext
from benchflow.agents.registry import get_agent_config
from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.sandbox import SandboxSpec, get_backend

pytestmark = pytest.mark.docker

FAKE = Path(__file__).resolve().parents[1] / "doubles" / "fake_acp_agent.py"
IMAGE = "benchflow/python:3.11-bookworm"
SECRET = "sk-test-abcdefghijklmnopqrstuvwxyz0123"

AGENT_TOML = """
name = "fake-acp"
description = "test double"
launch = "python3 /opt/fake/fake_acp_agent.py"
api_key_env = ["FAKE_API_KEY"]
[install]
kind = "none"
[gateway]
api = "openai-completions"
base_url_env = ["OPENAI_BASE_URL"]
api_key_env = ["OPENAI_API_KEY"]
[model]
via = "config_option"
[effort]
via = "config_option"
"""

OPTIONS = [
    {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "default",
     "options": [{"value": "default", "name": "Default"}, {"value": "m1", "name": "M1"}]},
    {"id": "reasoning", "name": "Effort", "category": "thought_level", "type": "select", "currentValue": "low",
     "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}]},
]


@pytest.fixture
async def sandbox():
    spec = SandboxSpec(name=f"acp-test-{uuid.uuid4().hex[:6]}", environment_dir=None, cache_key="acp-test",
                       image=IMAGE, network_mode="no-network", workdir="/app",
                       labels={"benchflow.test": "acp-runtime"})
    box = get_backend("docker").create(spec)
    await box.start()
    await box.put(FAKE, "/opt/fake/fake_acp_agent.py")
    try:
        yield box
    finally:
        await box.stop()


@pytest.fixture
def agent(tmp_path: Path) -> AcpAgent:
    path = tmp_path / "fake-acp.toml"
    path.write_text(AGENT_TOML)
    return AcpAgent(get_agent_config(str(path)))


def make_ctx(tmp_path: Path, script: dict, prompts: list[str], **kw) -> AgentContext:
    trial = tmp_path / "trial"
    sink = AcpTrajectoryFile(trial / "trajectory" / "acp_trajectory.jsonl")
    env = {"FAKE_ACP_SCRIPT": json.dumps(script), "OPENAI_API_KEY": SECRET}
    return AgentContext(task_name="t", workdir="/app", prompts=prompts, trial_dir=trial, trajectory=sink,
                        env=env, **kw)


def read_events(ctx: AgentContext) -> list[dict]:
    path = ctx.trial_dir / "trajectory" / "acp_trajectory.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_full_session_merges_chunks_and_writes_workspace(sandbox, agent, tmp_path):
    script = {"config_options": OPTIONS, "prompts": [
        [{"op": "thought", "text": "let me "}, {"op": "thought", "text": "think"},
         {"op": "message", "text": "Hello "}, {"op": "message", "text": "wor"}, {"op": "message", "text": "ld"},
         {"op": "tool", "id": "tc_1", "title": "write hello.txt", "kind": "edit",
          "write": {"path": "hello.txt", "content": "hello from the agent\n"}},
         {"op": "message", "text": f"my key is {SECRET}"}],
        [{"op": "permission"}, {"op": "fs_read"}, {"op": "report_config"}, {"op": "stderr", "text": "bye"}],
    ]}
    ctx = make_ctx(tmp_path, script, ["Create hello.txt", "Now report"], model="m1", effort="high",
                   timeout_sec=60, idle_timeout_sec=30)
    outcome = await agent.run(sandbox, ctx)

    assert outcome.error is None, outcome.error
    assert (outcome.n_prompts, outcome.n_tool_calls) == (2, 1)
    assert (outcome.n_message_chunks, outcome.n_thought_chunks) == (7, 2)
    events = read_events(ctx)
    assert [e["type"] for e in events] == ["user_message", "agent_thought", "agent_message", "tool_call",
                                           "agent_message", "user_message", "agent_message"]
    assert events[1]["text"] == "let me think"
    assert events[2]["text"] == "Hello world"
    tool = events[3]
    assert (tool["tool_call_id"], tool["status"], tool["kind"]) == ("tc_1", "completed", "edit")
    assert tool["content"][0]["content"]["text"] == "wrote hello.txt"
    assert SECRET not in json.dumps(events) and "my key is ***" in events[4]["text"]
    final = events[6]["text"]
    assert "permission:always" in final
    assert "fs_read_error:-32601" in final
    assert 'config:{"model": "m1", "reasoning": "high"}' in final

    result = await sandbox.exec(["sh", "-c", "cat /app/hello.txt; stat -c %U /app/hello.txt"])
    assert result.stdout == "hello from the agent\nagent\n"
    log = (ctx.trial_dir / "agent" / "fake_acp.txt").read_text()
    assert "got initialize" in log and "fake-agent: bye" in log and "uid 0 " not in log


async def test_model_falls_back_to_set_model_without_advertised_options(sandbox, agent, tmp_path):
    ctx = make_ctx(tmp_path, {"prompts": [[{"op": "report_config"}]]}, ["go"], model="m2", effort="low",
                   timeout_sec=60, idle_timeout_sec=30)
    outcome = await agent.run(sandbox, ctx)

    assert outcome.error is None, outcome.error
    assert read_events(ctx)[-1]["text"] == 'config:{"effort": "low", "set_model": "m2"}'


async def test_idle_timeout_cancels_and_is_recorded(sandbox, agent, tmp_path):
    script = {"prompts": [[{"op": "message", "text": "working"}, {"op": "sleep", "sec": 60}]]}
    ctx = make_ctx(tmp_path, script, ["go"], idle_timeout_sec=2, timeout_sec=60)
    started = time.monotonic()
    outcome = await agent.run(sandbox, ctx)

    assert time.monotonic() - started < 30
    assert outcome.idle_timed_out and not outcome.timed_out
    assert outcome.error_category == "idle_timeout"
    assert outcome.error.startswith("Agent idle for")
    info = outcome.idle_timeout_info
    assert info["idle_timeout_sec"] == 2 and info["n_message_chunks"] == 1 and info["idle_duration_sec"] >= 2
    last = read_events(ctx)[-1]
    assert last == {"type": "agent_timeout", "reason": "idle_timeout", "idle_timeout_sec": 2,
                    "terminal_trajectory_complete": True}
    assert "got session/cancel" in (ctx.trial_dir / "agent" / "fake_acp.txt").read_text()


async def test_in_flight_tool_call_counts_as_progress(sandbox, agent, tmp_path):
    script = {"prompts": [[{"op": "tool_start", "id": "slow"}, {"op": "sleep", "sec": 4},
                           {"op": "tool_end", "id": "slow"}, {"op": "message", "text": "done"}]]}
    ctx = make_ctx(tmp_path, script, ["go"], idle_timeout_sec=2, timeout_sec=60)
    outcome = await agent.run(sandbox, ctx)

    assert outcome.error is None and not outcome.idle_timed_out
    tool = [e for e in read_events(ctx) if e["type"] == "tool_call"]
    assert [(t["tool_call_id"], t["status"]) for t in tool] == [("slow", "completed")]


async def test_wall_clock_timeout_kills_a_hung_agent(sandbox, agent, tmp_path):
    script = {"prompts": [[{"op": "tool_start", "id": "tc_h"}, {"op": "hang"}]]}
    ctx = make_ctx(tmp_path, script, ["go"], timeout_sec=3, idle_timeout_sec=None)
    started = time.monotonic()
    outcome = await agent.run(sandbox, ctx)

    assert time.monotonic() - started < 30
    assert outcome.timed_out and outcome.error_category == "timeout"
    assert outcome.error == "Agent prompt exceeded wall-clock budget 3s"
    info = outcome.agent_timeout_info
    assert info["pending_tool_call_ids"] == ["tc_h"] and info["terminal_trajectory_complete"] is False
    assert read_events(ctx)[-1]["type"] == "agent_timeout"
    alive = await sandbox.exec(["sh", "-c", "ps -eo args | grep -c '[f]ake_acp_agent' || true"])
    assert alive.stdout.strip() == "0"


async def test_abrupt_exit_is_a_closed_pipe(sandbox, agent, tmp_path):
    script = {"prompts": [[{"op": "message", "text": "about to die"}, {"op": "exit", "code": 7}]]}
    ctx = make_ctx(tmp_path, script, ["go"], timeout_sec=60, idle_timeout_sec=30)
    outcome = await agent.run(sandbox, ctx)

    assert outcome.error_category == "pipe_closed"
    assert outcome.return_code == 7
    assert outcome.transport_error_info["process_exit_code"] == 7
    assert "exiting abruptly with 7" in outcome.transport_error_info["stderr_snippet"]
    assert [e["type"] for e in read_events(ctx)] == ["user_message", "agent_message"]


@pytest.mark.parametrize(("step", "category"), [
    ({"op": "error", "data": {"details": "HTTP 429: Too Many Requests"}}, "provider_rate_limit"),
    ({"op": "error", "data": {"details": "HTTP 401: invalid x-api-key"}}, "provider_auth"),
    ({"op": "error", "message": "something broke"}, "acp_error"),
])
async def test_acp_errors_are_categorised(sandbox, agent, tmp_path, step, category):
    ctx = make_ctx(tmp_path, {"prompts": [[step]]}, ["go"], timeout_sec=60, idle_timeout_sec=30)
    outcome = await agent.run(sandbox, ctx)

    assert outcome.error_category == category
    assert outcome.error.startswith("ACP error -32603 during session/prompt")
    assert outcome.n_prompts == 0


async def test_session_load_continues_a_conversation_kept_on_disk(sandbox, agent, tmp_path):
    script = {"load_session": True, "prompts": [[{"op": "report_history"}]]}
    first = make_ctx(tmp_path / "first", script, ["write the draft"], timeout_sec=60, idle_timeout_sec=30)
    parent = await agent.run(sandbox, first)
    assert parent.error is None, parent.error
    assert parent.load_session is True and parent.session_id

    again = make_ctx(tmp_path / "again", script, ["now rename it"], timeout_sec=60, idle_timeout_sec=30,
                     resume_session=parent.session_id)
    child = await agent.run(sandbox, again)
    assert child.error is None, child.error
    assert child.session_id == parent.session_id
    # the replayed history is not the new phase's trajectory; the agent saw it all the same
    assert [(e["type"], e["text"]) for e in read_events(again)] == [
        ("user_message", "now rename it"), ("agent_message", 'history:["write the draft", "now rename it"]')]


async def test_session_load_is_refused_for_an_agent_without_load_session(sandbox, agent, tmp_path):
    ctx = make_ctx(tmp_path, {"prompts": [[{"op": "message", "text": "hi"}]]}, ["go"], timeout_sec=60,
                   idle_timeout_sec=30, resume_session="fake-session-1")
    outcome = await agent.run(sandbox, ctx)
    assert outcome.load_session is False and outcome.n_prompts == 0
    assert outcome.error_category == "agent_integration"
    assert "does not advertise loadSession" in outcome.error
