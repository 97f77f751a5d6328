"""``bench run --sandbox apple-container`` and ``bench sandbox create|list|attach|release|cleanup`` end to end,
against the ``container`` CLI double (tests/doubles/apple_container_cli_double.py; each Apple container a
container on the local engine), and the refusal on a host that is not macOS."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import select
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

pytestmark = pytest.mark.docker


def _rows(env: dict[str, str]) -> list[dict]:
    listed = run_bench("sandbox", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    return [row for row in json.loads(listed.stdout) if row["sandbox"] == "apple-container"]


def _cleanup_leaves(sandbox_id: str, env: dict[str, str]) -> str:
    """Run ``bench sandbox cleanup`` (no --id); the reason it gives for leaving ``sandbox_id``."""
    cleaned = run_bench("sandbox", "cleanup", "--json", env=env)
    report = json.loads(cleaned.stdout)
    assert sandbox_id not in [entry["id"] for entry in report["removed"]], report
    [reason] = [entry["reason"] for entry in report["kept"] if entry["id"] == sandbox_id]
    return reason


def _in_a_terminal(args: list[str], env: dict[str, str], typed: bytes, timeout: float = 60) -> tuple[bytes, int]:
    """Run ``bench *args`` on a pseudo-terminal, type ``typed``; (what it printed, its exit status)."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: bench as a user types it in a terminal
        os.execve(sys.executable, [sys.executable, "-m", "benchflow.cli", *args], {**os.environ, **env})
    os.write(fd, typed)
    said, deadline = b"", time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([fd], [], [], 1)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                said += chunk
    except OSError:  # the terminal closed: the shell ended
        pass
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return said, os.waitstatus_to_exitcode(status)


def test_oracle_run_scores_one_and_leaves_no_container(tmp_path: Path, apple_container_double) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    env = apple_container_double | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "apple-container", "--jobs-dir", str(jobs), env=env)
    assert done.returncode == 0, done.stderr
    assert "Outcomes: 1 scored (1 passed, 0 failed), 0 unscored, 0 errored" in done.stdout
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["rewards"] == {"reward": 1.0} and result["environment"] == "apple-container"
    job = str(next(path for path in jobs.iterdir() if path.is_dir()).resolve())  # its label benchflow.job
    assert [row for row in _rows(env) if row["job"] == job] == []


def test_fixture_tasks_score_as_on_docker(tmp_path: Path, apple_container_double) -> None:
    """The repository's fixture tasks with a separate verifier sandbox, artifacts and setup commands."""
    tasks = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tasks), "--include", "reward-partial", "--include", "separate-verifier",
                     "--include", "artifacts-out", "--include", "setup-capture", "--sandbox", "apple-container",
                     "--jobs-dir", str(jobs), env=apple_container_double | {"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    rewards = {json.loads(path.read_text())["task_name"]: json.loads(path.read_text())["rewards"]
               for path in jobs.rglob("result.json")}
    assert rewards == {"reward-partial": {"reward": 0.5}, "separate-verifier": {"reward": 1.0},
                       "artifacts-out": {"reward": 1.0}, "setup-capture": {"reward": 1.0}}, done.stdout


def test_an_acp_agent_asks_its_model_over_the_exec_stream(tmp_path: Path, apple_container_double) -> None:
    from tests.integration.test_model_bridge import (
        ASK_AND_DUMP_ENV,
        assert_no_host_key_anywhere,
        run_model_agent,
        sandbox_env,
        trial_dirs,
    )

    jobs, upstream = run_model_agent(tmp_path, "apple-container", ASK_AND_DUMP_ENV,
                                     env=apple_container_double | {"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert len(upstream.requests) == 1
    [trial] = trial_dirs(jobs)
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0, result.get("error")
    assert sandbox_env(trial)["OPENAI_API_KEY"].startswith("sk-benchflow-")
    assert_no_host_key_anywhere(jobs)


def test_sandbox_list_and_cleanup_find_what_a_dead_run_left(tmp_path: Path, apple_container_double,
                                                            monkeypatch) -> None:
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in apple_container_double.items():
        monkeypatch.setenv(name, value)
    backend = get_backend("apple-container")
    job = f"left-{secrets.token_hex(4)}"
    box = backend.create(SandboxSpec(name="left", environment_dir=None, image="debian:bookworm-slim",
                                     cache_key="left", network_mode="no-network",
                                     labels={"benchflow.job": job, "benchflow.trial": "t1"}))
    box.labels["benchflow.pid"] = "999999999"  # as if a killed run had made it: its owner does not run
    asyncio.run(box.start())
    try:
        rows = [row for row in _rows(apple_container_double) if row["id"] == box.sandbox_id]
        assert [(row["trial"], row["job"], row["owner_alive"], row["state"]) for row in rows] == [
            ("t1", job, False, "running")]
        cleaned = run_bench("sandbox", "cleanup", "--id", box.sandbox_id, env=apple_container_double)
        assert cleaned.returncode == 0, cleaned.stderr
        assert not backend.exists(box.sandbox_id)
    finally:
        asyncio.run(box.stop())


def test_sandbox_create_makes_a_kept_container_set_up_at_its_first_start(tmp_path: Path,
                                                                          apple_container_double) -> None:
    """``bench sandbox create`` → listed kept, not started, no owner → attach starts it and finds it set up
    (workspace of the task's user, /logs) → cleanup leaves it → release deletes it."""
    make_task(tmp_path / "tasks", "made", test=PASS_IF_HELLO)
    env = apple_container_double | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    made = run_bench("sandbox", "create", str(tmp_path / "tasks" / "made"), "--sandbox", "apple-container", env=env)
    assert made.returncode == 0, made.stderr
    assert "not started" in made.stdout
    name = made.stdout.split("Created ", 1)[1].split()[0]
    assert [(row["state"], row["kept"], row["owner_alive"], row["task"]) for row in _rows(env)
            if row["id"] == name] == [("stopped", True, None, "made")]
    trial = tmp_path / "by-hand"  # create prints the id; a record naming it is what attach and release take
    trial.mkdir()
    (trial / "kept-sandbox.json").write_text(json.dumps({"backend": "apple-container", "sandbox_id": name}))
    try:
        attached = run_bench("sandbox", "attach", str(trial), "--", "sh", "-c",
                             "id -un; pwd; stat -c '%U %a' /app /logs/agent; exit 3", env=env)
        assert (attached.returncode, attached.stdout) == (3, "root\n/app\nagent 755\nroot 777\n"), attached.stderr
        assert [row["state"] for row in _rows(env) if row["id"] == name] == ["running"]
        assert "kept" in _cleanup_leaves(name, env)
        released = run_bench("sandbox", "release", str(trial), env=env)
        assert released.returncode == 0, released.stderr
        assert [row for row in _rows(env) if row["id"] == name] == []
        assert not (trial / "kept-sandbox.json").exists()
    finally:
        run_bench("sandbox", "cleanup", "--id", name, env=env)  # after a failure only


def test_keep_sandbox_always_keeps_the_trials_container_for_attach_and_release(tmp_path: Path,
                                                                               apple_container_double) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    env = apple_container_double | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "apple-container", "--keep-sandbox", "always",
                     "--jobs-dir", str(jobs), env=env)
    assert done.returncode == 0, done.stderr
    trial = next(jobs.rglob("kept-sandbox.json")).parent
    sandbox_id = json.loads((trial / "kept-sandbox.json").read_text())["sandbox_id"]
    try:
        assert [(row["trial"], row["kept"], row["owner_alive"]) for row in _rows(env) if row["id"] == sandbox_id] == [
            (trial.name, True, False)], "its run is gone, and it is kept"
        attached = run_bench("sandbox", "attach", str(trial), "--", "cat", "/app/hello.txt", env=env)
        assert (attached.returncode, attached.stdout) == (0, "hello\n"), attached.stderr
        assert run_bench("sandbox", "attach", str(trial), "--", "sh", "-c", "exit 5", env=env).returncode == 5
        said, status = _in_a_terminal(["sandbox", "attach", str(trial)], env, b"echo in-$((40+2)) $(id -un); exit 7\n")
        assert status == 7 and b"in-42 root" in said, said
        no_terminal = run_bench("sandbox", "attach", str(trial), env=env, input="")
        assert no_terminal.returncode != 0 and "pass a command after --" in no_terminal.stderr
        assert "kept" in _cleanup_leaves(sandbox_id, env)
        released = run_bench("sandbox", "release", str(trial), env=env)
        assert released.returncode == 0, released.stderr
        assert [row for row in _rows(env) if row["id"] == sandbox_id] == []
        assert not list((tmp_path / "cache" / "apple-container" / "kept").iterdir()), "its mark went with it"
    finally:
        run_bench("sandbox", "cleanup", "--id", sandbox_id, env=env)  # after a failure only


def test_allowlist_reaches_only_the_named_host_through_the_egress_proxy(tmp_path: Path,
                                                                        apple_container_double) -> None:
    from tests.integration.test_allowlist_network import SOLVE, TEST, Server

    token = secrets.token_hex(8)
    allowed, denied = Server(token), Server("must never be reached")
    try:
        task = tmp_path / "tasks" / "egress"
        for sub in ("environment", "oracle", "verifier"):
            (task / sub).mkdir(parents=True)
        (task / "task.md").write_text(
            "---\nschema_version: '1.3'\nagent: {timeout_sec: 60}\nverifier: {timeout_sec: 60}\n"
            "sandbox: {network_mode: allowlist, allowed_hosts: [allowed.test]}\n---\n\n## prompt\n\nFetch.\n")
        (task / "environment" / "Dockerfile").write_text("FROM benchflow/python:3.11-bookworm\nWORKDIR /app\n")
        (task / "oracle" / "solve.sh").write_text(SOLVE.format(allowed=allowed.port, denied=denied.port))
        (task / "verifier" / "test.sh").write_text(TEST.format(token=token))
        jobs = tmp_path / "jobs"
        done = run_bench("run", str(tmp_path / "tasks"), "-s", "apple-container", "--jobs-dir", str(jobs),
                         env=apple_container_double | {
                             "BENCHFLOW_CACHE": str(tmp_path / "cache"),
                             "BENCHFLOW_EGRESS_RESOLVE": "allowed.test=127.0.0.1,denied.test=127.0.0.1"})
        assert done.returncode == 0, done.stderr
        trial = next(jobs.glob("*/egress__*"))
        result = json.loads((trial / "result.json").read_text())
        assert result["rewards"] == {"reward": 1.0}, (result.get("error"),
                                                      (trial / "verifier" / "test-stdout.txt").read_text())
        assert denied.hits == [] and sorted(allowed.hits) == ["/", "/tunnel"]
        network = json.loads((trial / "network.json").read_text())
        assert network["network_mode"] == {"asked": "allowlist", "granted": "allowlist"}
    finally:
        allowed.close()
        denied.close()


@pytest.mark.skipif(sys.platform == "darwin", reason="on macOS the real CLI may be there")
def test_off_macos_the_run_is_refused_with_one_line(tmp_path: Path, apple_container_double) -> None:
    """The run card refuses it before anything starts, as every backend that cannot run here (exit 1, the
    contracts' code for a plan that cannot run, like a missing credential)."""
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    env = {"PATH": apple_container_double["PATH"], "BENCHFLOW_APPLE_CONTAINER_ANY_OS": ""}
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "apple-container", "--jobs-dir",
                     str(tmp_path / "jobs"), env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "needs macOS 26 with Apple's container CLI" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").rglob("result.json"))


def test_a_build_past_its_timeout_is_stopped_and_a_cancelled_exec_ends_inside(tmp_path: Path, apple_container_double,
                                                                              monkeypatch) -> None:
    from benchflow.errors import BuildError
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in apple_container_double.items():
        monkeypatch.setenv(name, value)
    env = tmp_path / "environment"
    env.mkdir()
    seconds = f"29.{secrets.randbelow(10**6)}"
    (env / "Dockerfile").write_text(f"FROM debian:bookworm-slim\nRUN sleep {seconds}\n")
    slow = get_backend("apple-container").create(SandboxSpec(
        name="slow", environment_dir=env, cache_key=f"slow-{seconds}", network_mode="no-network",
        build_timeout_sec=2))
    with pytest.raises(BuildError, match="timed out after 2s"):
        asyncio.run(slow.start())
    assert slow.sandbox_id is None

    box = get_backend("apple-container").create(SandboxSpec(
        name="cancel", environment_dir=None, image="debian:bookworm-slim", cache_key="cancel",
        network_mode="no-network"))
    needle = f"sleep 3{seconds}"

    async def sleeping() -> bool:
        seen = await box.exec(["sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"])
        return needle in seen.stdout

    async def until(want: bool) -> None:
        deadline = asyncio.get_running_loop().time() + 30
        while await sleeping() != want:
            assert asyncio.get_running_loop().time() < deadline, f"{needle!r} running is not {want} after 30s"
            await asyncio.sleep(0.1)

    async def cancel_an_exec() -> None:
        await box.start()
        try:
            running = asyncio.ensure_future(box.exec(needle.split()))
            await until(True)
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await until(False)  # the client's end ends nothing inside: the marked tree is killed there
        finally:
            await box.stop()

    asyncio.run(cancel_an_exec())


def test_a_failed_build_names_its_last_line_and_keeps_the_log_tail(tmp_path: Path, apple_container_double,
                                                                   monkeypatch) -> None:
    from benchflow.errors import BuildError
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in apple_container_double.items():
        monkeypatch.setenv(name, value)
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN echo the-build-broke; exit 3\n")
    box = get_backend("apple-container").create(SandboxSpec(
        name="broken", environment_dir=env, cache_key=f"broken-{secrets.token_hex(4)}", network_mode="no-network"))
    with pytest.raises(BuildError) as caught:
        asyncio.run(box.start())
    assert "image build failed: " in str(caught.value) and "\n" not in str(caught.value)
    assert "the-build-broke" in caught.value.log_tail


def test_a_pinned_image_is_used_pulled_or_said_missing(apple_container_double, monkeypatch) -> None:
    from benchflow.sandbox import get_backend

    for name, value in apple_container_double.items():
        monkeypatch.setenv(name, value)
    backend = get_backend("apple-container")
    assert backend.image_status("debian:bookworm-slim") == (True, "is in Apple container's images")
    missing = f"benchflow/not-there:{secrets.token_hex(4)}"
    ok, why = backend.image_status(missing, pull=False)
    assert ok is None and "a run pulls it" in why
    ok, why = backend.image_status(missing)
    assert ok is False and why.startswith("cannot be pulled (")
    cpus, memory = backend.host_resources()
    assert cpus and cpus >= 1 and memory and memory > 256
