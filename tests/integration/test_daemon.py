"""``bench daemon start|status|stop`` and ``bench run`` under ``BENCHFLOW_DAEMON=auto``: a real daemon
process on a private socket, real Docker sandboxes, the same output as a run in-process."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task
from tests.waiting import wait_until

pytestmark = pytest.mark.docker


@pytest.fixture
def daemon_env():
    """A runtime dir of this test's own (under /tmp, so another user can reach it when a test opens it up);
    the daemon is killed at the end whatever happened."""
    runtime = Path(tempfile.mkdtemp(prefix="benchflow-daemon-test-"))
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    yield env
    state = runtime / "benchflow" / "daemon.json"
    if state.exists():
        pid = json.loads(state.read_text())["pid"]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(runtime, ignore_errors=True)


def _state(env: dict) -> dict:
    return json.loads((Path(env["XDG_RUNTIME_DIR"]) / "benchflow" / "daemon.json").read_text())


def _score_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(("Outcomes:", "Score:"))]


def test_a_run_through_the_daemon_matches_one_in_process(tmp_path: Path, daemon_env: dict) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    make_task(tmp_path / "tasks", "nope", solve="true", test=PASS_IF_HELLO)
    started = run_bench("daemon", "start", env=daemon_env)
    assert started.returncode == 0, started.stderr
    sock = Path(daemon_env["XDG_RUNTIME_DIR"]) / "benchflow" / "daemon.sock"
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    assert "running" in run_bench("daemon", "status", env=daemon_env).stdout

    args = ("run", str(tmp_path / "tasks"), "-s", "docker", "-j", "2")
    here = run_bench(*args, "--jobs-dir", str(tmp_path / "here"), env=daemon_env)
    there = run_bench(*args, "--jobs-dir", str(tmp_path / "there"), env={**daemon_env, "BENCHFLOW_DAEMON": "auto"})
    assert (there.returncode, _score_lines(there.stdout)) == (here.returncode, _score_lines(here.stdout))
    assert "Outcomes: 2 scored (1 passed, 1 failed), 0 unscored, 0 errored" in there.stdout
    assert "hello: reward 1" in there.stderr and "nope: reward 0" in there.stderr
    status = run_bench("daemon", "status", env=daemon_env)
    assert "1 served" in status.stdout  # the run went through the daemon
    job = next(p for p in (tmp_path / "there").iterdir() if p.is_dir())
    assert json.loads((job / "summary.json").read_text())["passed"] == 1

    refused = run_bench("run", str(tmp_path / "missing"), env={**daemon_env, "BENCHFLOW_DAEMON": "auto"})
    in_process = run_bench("run", str(tmp_path / "missing"), env=daemon_env)
    assert refused.returncode == in_process.returncode == 2
    assert refused.stderr.strip() == in_process.stderr.strip()
    assert run_bench("daemon", "stop", env=daemon_env).returncode == 0
    assert run_bench("daemon", "status", env=daemon_env).returncode == 1


def test_stop_is_refused_while_a_run_is_active(tmp_path: Path, daemon_env: dict) -> None:
    make_task(tmp_path / "tasks", "slow", solve="sleep 4; " + WRITE_HELLO, test=PASS_IF_HELLO)
    assert run_bench("daemon", "start", env=daemon_env).returncode == 0
    env = {**os.environ, **daemon_env, "BENCHFLOW_DAEMON": "auto"}
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "run", str(tmp_path / "tasks"), "-s", "docker",
                             "--jobs-dir", str(tmp_path / "jobs")], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_until(lambda: "1 active call(s)" in run_bench("daemon", "status", env=daemon_env).stdout, timeout=60,
               what="the run to be active in the daemon")
    refused = run_bench("daemon", "stop", env=daemon_env)
    assert refused.returncode == 1
    assert "not stopped" in refused.stdout
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    assert "Outcomes: 1 scored (1 passed, 0 failed)" in out
    stopped = run_bench("daemon", "stop", env=daemon_env)
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "bench daemon: stopped")
    assert run_bench("daemon", "status", env=daemon_env).returncode == 1


def test_a_killed_daemon_is_detected_and_the_run_falls_back(tmp_path: Path, daemon_env: dict) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    assert run_bench("daemon", "start", env=daemon_env).returncode == 0
    pid = _state(daemon_env)["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text(),
               timeout=30, what="the daemon to die")
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"),
                     env={**daemon_env, "BENCHFLOW_DAEMON": "auto"})
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("bench daemon:")]
    assert notes == [(f"bench daemon: the daemon (pid {pid}) is gone; its stale socket was removed; "
                      "running in this process")]
    assert "Outcomes: 1 scored (1 passed, 0 failed), 0 unscored, 0 errored" in done.stdout
    assert run_bench("daemon", "status", env=daemon_env).stdout.strip() == "bench daemon: not running"


@pytest.mark.skipif(os.getuid() != 0, reason="switching to another user needs root")
def test_another_user_gets_no_answer_even_through_an_open_socket(tmp_path: Path, daemon_env: dict) -> None:
    assert run_bench("daemon", "start", env=daemon_env).returncode == 0
    sock = Path(daemon_env["XDG_RUNTIME_DIR"]) / "benchflow" / "daemon.sock"
    for path in (Path(daemon_env["XDG_RUNTIME_DIR"]), sock.parent, sock):  # a careless chmod opens the files
        path.chmod(0o777)
    child = os.fork()
    if child == 0:  # as nobody: connect, ask, and report what came back in the exit code
        code = 3
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX) as conn:
                conn.settimeout(10)
                conn.connect(str(sock))
                try:
                    conn.sendall(b'{"op": "status"}\n')
                    code = 0 if conn.recv(4096) == b"" else 1
                except ConnectionError:  # hung up before (or while) the request went out
                    code = 0
        except OSError:
            code = 2
        os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # connected, and the daemon hung up without a word
    sock.parent.chmod(0o700)
    assert "running" in run_bench("daemon", "status", env=daemon_env).stdout


def test_ctrl_c_cancels_the_run_in_the_daemon_and_leaves_nothing_running(tmp_path: Path, daemon_env: dict) -> None:
    import docker

    make_task(tmp_path / "tasks", "slow", solve="sleep 60", test=PASS_IF_HELLO, agent_timeout=120)
    assert run_bench("daemon", "start", env=daemon_env).returncode == 0
    jobs = tmp_path / "jobs"
    env = {**os.environ, **daemon_env, "BENCHFLOW_DAEMON": "auto"}
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "run", str(tmp_path / "tasks"), "-s", "docker",
                             "--jobs-dir", str(jobs)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    api = docker.from_env().api

    def containers() -> list:
        job = next((p for p in jobs.iterdir() if p.is_dir()), None) if jobs.is_dir() else None
        return api.containers(all=True, filters={"label": f"benchflow.job={job.resolve()}"}) if job else []

    wait_until(lambda: list(jobs.rglob("sandbox.json")), timeout=60, what="the trial's sandbox to be up")
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert containers() == []
    assert "0 active call(s), 1 served" in run_bench("daemon", "status", env=daemon_env).stdout


def test_prepare_serves_the_next_identical_call_from_a_started_sandbox(tmp_path: Path, daemon_env: dict) -> None:
    import docker

    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    assert run_bench("daemon", "start", "--prepare", "1", "--prepare-ttl", "120", env=daemon_env).returncode == 0
    pid = _state(daemon_env)["pid"]
    api = docker.from_env().api
    args = ("run", str(tmp_path / "tasks"), "-s", "docker", "--fresh", "--jobs-dir", str(tmp_path / "jobs"))
    attached = {**daemon_env, "BENCHFLOW_DAEMON": "auto"}

    def prepared() -> list[str]:
        return [c["Id"] for c in api.containers(filters={"label": f"benchflow.pid={pid}", "status": "running"})]

    assert run_bench(*args, env=attached).returncode == 0
    # the first trial's own container may still be running while the engine removes it (its removal is
    # not awaited): the prepared sandbox is the daemon's other one
    first = {json.loads(p.read_text())["sandbox_id"] for p in (tmp_path / "jobs").rglob("sandbox.json")}
    wait_until(lambda: "1 prepared" in run_bench("daemon", "status", env=daemon_env).stdout, timeout=60,
               what="the daemon to report a prepared sandbox")
    ready = wait_until(lambda: [c for c in prepared() if c not in first], timeout=60, what="a prepared sandbox")
    second = run_bench(*args, env=attached)
    assert second.returncode == 0, second.stderr
    assert "Outcomes: 1 scored (1 passed, 0 failed), 0 unscored, 0 errored" in second.stdout
    used = {json.loads(p.read_text())["sandbox_id"] for p in (tmp_path / "jobs").rglob("sandbox.json")}
    assert ready[0] in used  # the second run's trial ran in the prepared sandbox
    wait_until(lambda: [c for c in prepared() if c not in used], timeout=60, what="the next prepared sandbox")
    assert run_bench("daemon", "stop", env=daemon_env).returncode == 0
    assert api.containers(all=True, filters={"label": f"benchflow.pid={pid}"}) == []  # stop removed it


def test_runs_use_the_daemons_warm_gateway_each_with_its_own_key(tmp_path: Path, daemon_env: dict) -> None:
    """The daemon's gateway, started once, serves two runs of a model-calling agent (the fake ACP
    agent against the fake model server): each run's call carries its caller's provider key, each
    trial's usage is its own, and no provider key reaches a job folder."""
    from tests.doubles.fake_model_server import OUTPUT, FakeModelServer
    from tests.integration.test_agent_pipeline import PYTHON_IMAGE, fake_agent_file

    make_task(tmp_path / "tasks", "ask", dockerfile=PYTHON_IMAGE, network="no-network",
              test='[ "$(cat /app/answer.txt)" = 42 ] && echo 1 > /logs/verifier/reward.txt '
                   '|| echo 0 > /logs/verifier/reward.txt')
    steps = [{"op": "ask_model", "api": "openai", "prompt": "what is six times seven?"},
             {"op": "tool", "id": "w", "write": {"path": "answer.txt", "content": "42"}}]
    keys = ["sk-proj-FIRSTrunKEY" + "f" * 30, "sk-proj-SECONDrunKEY" + "s" * 30]
    assert run_bench("daemon", "start", env=daemon_env).returncode == 0
    assert "gateway warm (0 run(s) served)" in run_bench("daemon", "status", env=daemon_env).stdout
    with FakeModelServer() as upstream:
        for n, key in enumerate(keys):
            done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(tmp_path / f"jobs{n}"),
                             "-a", str(fake_agent_file(tmp_path)), "-m", "gpt-4o-mini", "--retry-attempts", "0",
                             "--agent-env", f"FAKE_ACP_SCRIPT={json.dumps({'prompts': [steps]})}",
                             env={**daemon_env, "BENCHFLOW_DAEMON": "auto", "OPENAI_API_KEY": key,
                                  "OPENAI_BASE_URL": upstream.url + "/v1"})
            assert done.returncode == 0, done.stderr + done.stdout
        assert [r["headers"]["authorization"] for r in upstream.requests] == [f"Bearer {k}" for k in keys]
    assert "2 served, 0 prepared, gateway warm (2 run(s) served)" in run_bench("daemon", "status", env=daemon_env).stdout
    for n in range(2):
        (result,) = [json.loads(p.read_text()) for p in (tmp_path / f"jobs{n}").rglob("result.json")]
        assert result["rewards"] == {"reward": 1.0}, result.get("error")
        assert result["agent_result"]["n_output_tokens"] == OUTPUT  # this run's one call, counted by the shared gateway
        blob = "".join(p.read_text(errors="replace") for p in (tmp_path / f"jobs{n}").rglob("*") if p.is_file())
        assert not any(k in blob for k in keys)
    assert run_bench("daemon", "stop", env=daemon_env).returncode == 0
