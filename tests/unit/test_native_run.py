"""The native harness runtime driving the CLI test doubles as local processes.

A minimal in-test sandbox gives ``exec_stream`` over plain local subprocesses
(no Docker), so resume, line-by-line trajectory, usage, watchdogs and error
categories are checked quickly; tests/integration/test_native_harness.py runs
the same doubles through ``bench run`` in Docker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchflow import agents
from benchflow.agents.agent_config import AgentConfig
from benchflow.agents.base import AgentContext
from benchflow.agents.native import NativeAgent
from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.errors import ConfigError

DOUBLES = Path(__file__).resolve().parents[1] / "doubles"
CLAUDE_CMD = (f"{sys.executable} {DOUBLES / 'fake_claude_cli.py'} -p --output-format stream-json --verbose "
              '${BENCHFLOW_NATIVE_MODEL:+--model "$BENCHFLOW_NATIVE_MODEL"} '
              '${BENCHFLOW_NATIVE_SESSION:+--resume "$BENCHFLOW_NATIVE_SESSION"}')
CODEX_CMD = (f"{sys.executable} {DOUBLES / 'fake_codex_cli.py'} exec --json --skip-git-repo-check "
             '${BENCHFLOW_NATIVE_MODEL:+-m "$BENCHFLOW_NATIVE_MODEL"} '
             '${BENCHFLOW_NATIVE_SESSION:+resume "$BENCHFLOW_NATIVE_SESSION"} -')


class _LocalProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self.stdin, self.stdout, self.stderr = proc.stdin, proc.stdout, proc.stderr

    async def wait(self) -> int:
        return await self._proc.wait()

    async def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)


class LocalStreamSandbox:
    """Just enough of a sandbox for the native runtime: streaming exec of local processes."""

    def __init__(self) -> None:
        self.processes: list[_LocalProcess] = []

    async def exec_stream(self, cmd: list[str], *, user: str | None = None, env: Any = None,
                          cwd: str | None = None) -> _LocalProcess:
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=dict(env or {}), cwd=cwd, start_new_session=True)
        self.processes.append(_LocalProcess(proc))
        return self.processes[-1]


def native_agent(fmt: str, command: str) -> NativeAgent:
    return NativeAgent(AgentConfig.model_validate({
        "name": f"fake-{fmt.split('-')[0]}", "install": {"kind": "none"}, "launch": "unused",
        "gateway": {"api": "anthropic-messages"}, "effort": {"via": "none"},
        "native": {"format": fmt, "command": command}}))


async def run_native(tmp: Path, fmt: str, command: str, prompts: list[str], script: list[list[dict]],
                     **ctx_args: Any) -> tuple[Any, list[dict], Path, LocalStreamSandbox]:
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    sink = AcpTrajectoryFile(tmp / "trial" / "trajectory" / "acp_trajectory.jsonl")
    ctx = AgentContext(task_name="t", workdir=str(work), prompts=prompts, trial_dir=tmp / "trial", trajectory=sink,
                       env={"HOME": str(tmp), "FAKE_CLI_SCRIPT": json.dumps({"prompts": script})},
                       user=None, **ctx_args)
    sandbox = LocalStreamSandbox()
    outcome = await native_agent(fmt, command).run(sandbox, ctx)
    events = [json.loads(line) for line in sink.path.read_text().splitlines()]
    return outcome, events, tmp / "trial", sandbox


@pytest.mark.parametrize("fmt,command", [("claude-stream-json", CLAUDE_CMD), ("codex-exec-json", CODEX_CMD)])
async def test_two_prompts_continue_one_session(tmp_path: Path, fmt: str, command: str) -> None:
    first = [{"op": "thought", "text": "plan"}, {"op": "tool", "write": {"path": "answer.txt", "content": "42"}},
             {"op": "tool", "run": "echo oops; exit 3"}, {"op": "stderr", "text": "cli log line"},
             {"op": "echo_prompt"}]
    outcome, events, trial, _ = await run_native(tmp_path, fmt, command, ["write the answer", "check it"],
                                                 [first, [{"op": "echo_prompt"}]], model="m-1")
    assert outcome.error is None, outcome.error
    assert (tmp_path / "work" / "answer.txt").read_text() == "42"
    assert [e["type"] for e in events] == ["user_message", "agent_thought", "tool_call", "tool_call",
                                           "agent_message", "user_message", "agent_message"]
    assert [e["status"] for e in events if e["type"] == "tool_call"] == ["completed", "failed"]
    assert events[4]["text"].startswith("prompt 1: write the answer")
    assert events[6]["text"].startswith("prompt 2: check it")  # the second process resumed the session
    assert (outcome.n_prompts, outcome.n_tool_calls, outcome.n_message_chunks, outcome.n_thought_chunks) == (2, 2, 2, 1)
    assert outcome.trajectory_source == "native" and outcome.return_code == 0
    assert outcome.usage["agent_reported"]["input_tokens"] == 200
    assert outcome.usage["agent_reported"]["output_tokens"] == 20 * 2  # codex reports thread totals: not summed
    if fmt == "claude-stream-json":  # claude reports the session's running cost: not summed either
        assert outcome.usage["agent_reported"]["cost_usd"] == 0.003
    assert "cli log line" in (trial / "agent" / f"{native_agent(fmt, command).config.log_name}.txt").read_text()


async def test_wall_clock_timeout_keeps_what_was_done_and_kills_the_cli(tmp_path: Path) -> None:
    script = [[{"op": "message", "text": "starting"}, {"op": "tool_start"}]]
    started = time.monotonic()
    outcome, events, _, sandbox = await run_native(tmp_path, "claude-stream-json", CLAUDE_CMD, ["go"], script,
                                                   timeout_sec=1.5, idle_timeout_sec=0.5)
    assert time.monotonic() - started < 15
    assert outcome.timed_out and outcome.error_category == "timeout"  # an in-flight tool call is not idleness
    assert outcome.agent_timeout_info["pending_tool_call_ids"] == ["toolu_inflight"]
    assert [e["type"] for e in events] == ["user_message", "agent_message", "tool_call", "agent_timeout"]
    assert events[2]["status"] == "in_progress" and events[3]["reason"] == "wall_clock_timeout"
    assert outcome.partial_trajectory and outcome.return_code not in (None, 0)
    assert sandbox.processes[0]._proc.returncode is not None


async def test_idle_cli_is_stopped(tmp_path: Path) -> None:
    outcome, events, _, _ = await run_native(tmp_path, "codex-exec-json", CODEX_CMD, ["go"],
                                             [[{"op": "sleep", "sec": 60}]], idle_timeout_sec=1)
    assert outcome.idle_timed_out and outcome.error_category == "idle_timeout"
    assert events[-1]["type"] == "agent_timeout" and events[-1]["reason"] == "idle_timeout"


async def test_budget_stop_is_graded_not_an_error(tmp_path: Path) -> None:
    outcome, events, _, _ = await run_native(tmp_path, "claude-stream-json", CLAUDE_CMD, ["go"],
                                             [[{"op": "sleep", "sec": 60}]], should_stop=lambda: "turn_budget")
    assert outcome.error is None and events[-1] == {"type": "agent_stopped", "reason": "turn_budget",
                                                    "terminal_trajectory_complete": False}


@pytest.mark.parametrize("fmt,command,step,category", [
    ("claude-stream-json", CLAUDE_CMD, {"op": "exit", "code": 7}, "pipe_closed"),
    ("claude-stream-json", CLAUDE_CMD, {"op": "error", "text": "Invalid API key · Please run /login"}, "provider_auth"),
    ("codex-exec-json", CODEX_CMD, {"op": "error", "text": "unexpected status 429 Too Many Requests"},
     "provider_rate_limit"),
    ("codex-exec-json", CODEX_CMD, {"op": "error", "text": "model is not supported"}, "acp_error"),
])
async def test_cli_failures_are_categorised(tmp_path: Path, fmt: str, command: str, step: dict, category: str) -> None:
    outcome, events, _, _ = await run_native(tmp_path, fmt, command, ["one", "two"],
                                             [[{"op": "message", "text": "hi"}, step]])
    assert outcome.error_category == category, outcome.error
    assert outcome.return_code not in (None, 0) and outcome.n_prompts == 0
    assert sum(e["type"] == "user_message" for e in events) == 1  # the second prompt never started
    if category == "pipe_closed":
        assert outcome.transport_error_info["process_exit_code"] == 7


def test_harness_native_is_refused_for_agents_without_it() -> None:
    assert isinstance(agents.resolve("codex", harness="native"), NativeAgent)
    with pytest.raises(ConfigError) as err:
        agents.resolve("gemini", harness="native")
    assert err.value.exit_code == 2
    assert "claude-agent-acp, codex-acp" in str(err.value)
    assert agents.resolve("oracle", harness="native").name == "oracle"
