"""The model bridge: the agent reaches the gateway from any backend, with the trial's key only.

- ``docker`` (host mounts): the trial's own folder, mounted read-only, holds the gateway socket;
  an agent (as its user, or as root) cannot replace or remove it.
- ``remote-docker`` (no host mounts): connections travel over the forwarder's exec stream; runs
  against the second engine of ``scripts/docker-engine.sh --remote``.
- The stream transport itself (Python and Node forwarders) against a local process, no engine.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchflow.jobs.bridge import open_bridge
from benchflow.jobs.model_access import keys_replaced
from tests.conftest import run_bench
from tests.doubles.fake_model_server import FakeModelServer
from tests.integration.test_agent_pipeline import PYTHON_IMAGE, UPSTREAM_KEY, fake_agent_file
from tests.taskgen import make_task

GOOGLE_KEY = "AIzaSyHOSTKEY" + "g" * 26
REMOTE_SOCKET = "unix:///run/benchflow-remote-docker.sock"
PASS_IF_ANSWERED = ('[ "$(cat /app/answer.txt)" = 42 ] && echo 1 > /logs/verifier/reward.txt '
                    '|| echo 0 > /logs/verifier/reward.txt')
TAMPER = ("cd /run/benchflow-gateway && for try in 'rm -f gateway.sock' 'mv gateway.sock moved' "
          "'chmod 000 gateway.sock' 'touch forward.py' 'ln -s /tmp/x gateway.sock.new' "
          "'mount -o remount,rw /run/benchflow-gateway'; do "
          "if sh -c \"$try\" 2>/dev/null; then echo \"ALLOWED $try\"; else echo \"refused $try\"; fi; "
          "done > /logs/agent/tamper.txt")


def remote_engine() -> str:
    from benchflow.sandbox.docker_engine import ping

    url = os.environ.get("BENCHFLOW_REMOTE_DOCKER_HOST") or REMOTE_SOCKET
    if ping(url, timeout=3)[0]:
        return url
    reason = "no second engine answers; run scripts/docker-engine.sh --remote"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def run_model_agent(tmp: Path, sandbox: str, steps: list[dict], *extra: str, tasks: int = 1,
                    env: dict[str, str] | None = None) -> tuple[Path, FakeModelServer]:
    """``bench run`` of the fake ACP agent on ``tasks`` python tasks; returns (jobs dir, upstream)."""
    for i in range(tasks):
        make_task(tmp / "tasks", f"ask-{i}", dockerfile=PYTHON_IMAGE, network="no-network", test=PASS_IF_ANSWERED)
    jobs = tmp / "jobs"
    with FakeModelServer() as upstream:
        done = run_bench("run", str(tmp / "tasks"), "-s", sandbox, "--jobs-dir", str(jobs), "-j", "1",
                         "-a", str(fake_agent_file(tmp)), "-m", "gpt-4o-mini", "--retry-attempts", "0",
                         "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps({'prompts': [steps]})}",
                         "--agent-env", f"GOOGLE_API_KEY={GOOGLE_KEY}", *extra,
                         env={"OPENAI_API_KEY": UPSTREAM_KEY, "OPENAI_BASE_URL": upstream.url + "/v1", **(env or {})})
    assert done.returncode == 0, done.stderr + done.stdout
    return jobs, upstream


def trial_dirs(jobs: Path) -> list[Path]:
    return sorted(p.parent for p in jobs.rglob("result.json") if (p.parent / "config.json").is_file())


def assert_no_host_key_anywhere(jobs: Path) -> None:
    blob = "".join(p.read_text(errors="replace") for p in jobs.rglob("*") if p.is_file())
    assert UPSTREAM_KEY not in blob and GOOGLE_KEY not in blob


ASK_AND_DUMP_ENV = [
    {"op": "tool", "id": "env", "run": "env > /logs/agent/env.txt"},
    {"op": "ask_model", "api": "openai", "prompt": "what is six times seven?"},
    {"op": "tool", "id": "w", "write": {"path": "answer.txt", "content": "42"}},
]


def sandbox_env(trial: Path) -> dict[str, str]:
    lines = (trial / "agent" / "env.txt").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.mark.docker
def test_remote_docker_runs_a_model_calling_agent_over_the_exec_stream(tmp_path: Path) -> None:
    url = remote_engine()
    jobs, upstream = run_model_agent(tmp_path, "remote-docker", ASK_AND_DUMP_ENV,
                                     env={"BENCHFLOW_REMOTE_DOCKER_HOST": url})
    assert len(upstream.requests) == 1
    assert upstream.requests[0]["headers"]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    [trial] = trial_dirs(jobs)
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0, result.get("error")
    assert result["agent_result"]["n_input_tokens"] > 0
    env = sandbox_env(trial)
    assert env["OPENAI_API_KEY"].startswith("sk-benchflow-")
    assert env["GOOGLE_API_KEY"] == env["OPENAI_API_KEY"]  # the --agent-env key became the trial's
    assert env["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert_no_host_key_anywhere(jobs)


@pytest.mark.docker
@pytest.mark.parametrize("user", ["agent", "root"])
def test_docker_agent_cannot_replace_the_bridge_and_its_keys_are_the_trial_own(tmp_path: Path, user: str) -> None:
    # Two trials in a row: the first one's tampering must not touch the second one's bridge.
    steps = [{"op": "tool", "id": "tamper", "run": TAMPER}, *ASK_AND_DUMP_ENV]
    jobs, upstream = run_model_agent(tmp_path, "docker", steps, "--sandbox-user", user, tasks=2)
    assert len(upstream.requests) == 2
    trials = trial_dirs(jobs)
    assert len(trials) == 2
    for trial in trials:
        tamper = (trial / "agent" / "tamper.txt").read_text()
        assert "ALLOWED" not in tamper, tamper
        assert tamper.count("refused") == 6
        result = json.loads((trial / "result.json").read_text())
        assert result["rewards"]["reward"] == 1.0, result.get("error")
        env = sandbox_env(trial)
        assert env["GOOGLE_API_KEY"] == env["OPENAI_API_KEY"] and env["OPENAI_API_KEY"].startswith("sk-benchflow-")
    assert sandbox_env(trials[0])["OPENAI_API_KEY"] != sandbox_env(trials[1])["OPENAI_API_KEY"]
    assert_no_host_key_anywhere(jobs)


def test_keys_held_by_agent_env_become_the_trial_key() -> None:
    agent_env = {"GOOGLE_API_KEY": "real-g", "MY_ALIAS": "real-o", "FAKE_ACP_SCRIPT": "{}", "DEBUG": "1"}
    replaced = keys_replaced(agent_env, {"real-o", "real-g"}, "sk-benchflow-trial")
    assert replaced == {"GOOGLE_API_KEY": "sk-benchflow-trial", "MY_ALIAS": "sk-benchflow-trial"}


class _LocalProcess:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc, self.stdin, self.stdout, self.stderr = proc, proc.stdin, proc.stdout, proc.stderr

    async def wait(self) -> int:
        return await self._proc.wait()

    async def kill(self) -> None:
        if self._proc.returncode is None:
            self._proc.kill()
        await self._proc.wait()


class _HostSandbox:
    """Runs the forwarder as a plain local process: the exec stream without any engine."""

    def __init__(self, path: str | None = None) -> None:
        self.spec = SimpleNamespace(mounts={})
        self.path = path

    async def exec_stream(self, cmd: list[str], **_: object) -> _LocalProcess:
        env = {**os.environ, "PATH": self.path} if self.path else None
        return _LocalProcess(await asyncio.create_subprocess_exec(
            *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=env))


def _node_only_path(tmp: Path) -> str | None:
    node, sh = shutil.which("node"), shutil.which("sh")
    if node is None:
        return None
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)
    (bin_dir / "sh").symlink_to(sh)
    return str(bin_dir)


@pytest.mark.parametrize("forwarder", ["python", "node"])
async def test_stream_transport_carries_concurrent_connections_both_ways(tmp_path: Path, forwarder: str) -> None:
    path = None
    if forwarder == "node":
        path = _node_only_path(tmp_path)
        if path is None:
            pytest.skip("node is not installed on this machine")

    async def gateway(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        size = int((await reader.readline()).decode())  # a request: length line, then a body
        body = await reader.readexactly(size)
        writer.write(body[::-1])  # answer with the body reversed, then close
        await writer.drain()
        writer.close()

    socket_path = tmp_path / "gw.sock"
    server = await asyncio.start_unix_server(gateway, str(socket_path))
    bridge = await open_bridge(_HostSandbox(path), socket_path, mounted=False)
    port = int(bridge.url.rsplit(":", 1)[1])

    async def call(i: int) -> bool:
        body = os.urandom(1 << 18) + str(i).encode()  # 256 KiB: many frames per connection
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"{len(body)}\n".encode() + body)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        return answer == body[::-1]

    try:
        assert all(await asyncio.gather(*(call(i) for i in range(16))))
    finally:
        bridge.close()
        await bridge.process.kill()
        server.close()
