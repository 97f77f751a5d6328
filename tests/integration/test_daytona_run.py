"""``bench run --sandbox daytona`` and ``bench sandbox list|cleanup`` end to end, against the Daytona API
double (tests/doubles/daytona_api_double.py; each sandbox a container on the local engine)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

COMPAT = Path(__file__).parents[1] / "fixtures" / "compat"

pytestmark = pytest.mark.docker


def test_oracle_run_scores_one_and_leaves_no_sandbox(tmp_path: Path, daytona_double) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    env = daytona_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "daytona", "--jobs-dir", str(jobs), env=env)
    assert done.returncode == 0, done.stderr
    assert "Outcomes: 1 scored (1 passed, 0 failed), 0 unscored, 0 errored" in done.stdout
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["rewards"] == {"reward": 1.0} and result["environment"] == "daytona"
    made = [path for method, path in daytona_double.double.requests if method == "POST" and path == "/api/sandbox"]
    assert made, "the run made its sandbox through the Daytona API"
    listed = run_bench("sandbox", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [row for row in json.loads(listed.stdout) if row["sandbox"] == "daytona"] == []


def test_sandbox_list_and_cleanup_find_what_a_dead_run_left(tmp_path: Path, daytona_double, monkeypatch) -> None:
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in daytona_double.env().items():
        monkeypatch.setenv(name, value)
    backend = get_backend("daytona")
    box = backend.create(SandboxSpec(name="left", environment_dir=None, image="debian:bookworm-slim",
                                     cache_key="left", network_mode="no-network",
                                     labels={"benchflow.job": f"left-{tmp_path.name}", "benchflow.trial": "t1"}))
    # As if a killed run had made it: its owner is a pid that does not run.
    box.labels["benchflow.pid"] = "999999999"
    asyncio.run(box.start())
    try:
        env = daytona_double.env()
        listed = run_bench("sandbox", "list", "--json", env=env)
        assert listed.returncode == 0, listed.stderr
        rows = [row for row in json.loads(listed.stdout) if row["id"] == box.sandbox_id]
        assert [(row["sandbox"], row["trial"], row["owner_alive"]) for row in rows] == [("daytona", "t1", False)]
        cleaned = run_bench("sandbox", "cleanup", "--id", box.sandbox_id, env=env)
        assert cleaned.returncode == 0, cleaned.stderr
        assert not backend.exists(box.sandbox_id)
    finally:
        asyncio.run(box.stop())


def test_what_a_sandbox_asks_daytona_for_and_a_failed_build(tmp_path: Path, daytona_double, monkeypatch) -> None:
    from benchflow.errors import BuildError
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in daytona_double.env().items():
        monkeypatch.setenv(name, value)
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN echo the build broke; exit 3\n")
    box = get_backend("daytona").create(SandboxSpec(
        name="asks", environment_dir=env, cache_key="asks", network_mode="no-network", cpus=1.5, memory_mb=3000,
        env={"TASK_VAR": "1"}, labels={"benchflow.job": "j-asks", "benchflow.trial": "t-asks"}))
    with pytest.raises(BuildError, match="did not start"):
        asyncio.run(box.start())
    body = daytona_double.double.created[-1]
    assert (body["networkBlockAll"], body["cpu"], body["memory"], body["env"]) == (True, 2, 3, {"TASK_VAR": "1"})
    assert {"benchflow.job": "j-asks", "benchflow.trial": "t-asks", "benchflow.backend": "daytona",
            "benchflow.owned": "true"}.items() <= body["labels"].items()
    assert body["buildInfo"]["dockerfileContent"] == (env / "Dockerfile").read_text()
    assert len(body["buildInfo"]["contextHashes"]) == 1
    assert not get_backend("daytona").exists(box.sandbox_id), "a failed start deletes its sandbox"


def test_without_a_key_or_with_a_wrong_one_daytona_is_unavailable(daytona_double, monkeypatch) -> None:
    from benchflow.sandbox import get_backend

    monkeypatch.delenv("DAYTONA_API_KEY", raising=False)
    ok, why = get_backend("daytona").available()
    assert not ok and "DAYTONA_API_KEY" in why
    monkeypatch.setenv("DAYTONA_API_URL", daytona_double.env()["DAYTONA_API_URL"])
    monkeypatch.setenv("DAYTONA_API_KEY", "wrong")
    ok, why = get_backend("daytona").available()
    assert not ok and "refused DAYTONA_API_KEY" in why


def test_sandbox_create_keeps_a_stopped_daytona_sandbox_until_cleanup(tmp_path: Path, daytona_double) -> None:
    make_task(tmp_path / "tasks", "kept", test=PASS_IF_HELLO)
    env = daytona_double.env()
    made = run_bench("sandbox", "create", str(tmp_path / "tasks" / "kept"), "--sandbox", "daytona", env=env)
    assert made.returncode == 0, made.stderr
    assert "not started" in made.stdout
    sandbox_id = made.stdout.rsplit("--id ", 1)[1].strip()
    rows = [row for row in json.loads(run_bench("sandbox", "list", "--json", env=env).stdout)
            if row["id"].startswith(sandbox_id)]
    assert [(row["state"], row["kept"], row["owner_alive"]) for row in rows] == [("stopped", True, None)]
    cleaned = run_bench("sandbox", "cleanup", "--id", sandbox_id, env=env)
    assert cleaned.returncode == 0, cleaned.stderr
    assert [row for row in json.loads(run_bench("sandbox", "list", "--json", env=env).stdout)
            if row["id"].startswith(sandbox_id)] == []


def test_keep_sandbox_then_attach_and_release(tmp_path: Path, daytona_double) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    env = daytona_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "daytona", "--keep-sandbox", "always",
                     "--jobs-dir", str(jobs), env=env)
    assert done.returncode == 0, done.stderr
    trial = next(jobs.rglob("kept-sandbox.json")).parent
    attached = run_bench("sandbox", "attach", str(trial), "--", "cat", "/app/hello.txt", env=env)
    assert (attached.returncode, attached.stdout) == (0, "hello\n"), attached.stderr
    failing = run_bench("sandbox", "attach", str(trial), "--", "sh", "-c", "exit 5", env=env)
    assert failing.returncode == 5
    no_shell = run_bench("sandbox", "attach", str(trial), env=env)
    assert no_shell.returncode != 0 and "pass a command after --" in no_shell.stderr
    released = run_bench("sandbox", "release", str(trial), env=env)
    assert released.returncode == 0, released.stderr
    assert run_bench("sandbox", "attach", str(trial), "--", "true", env=env).returncode != 0


def test_snapshots_go_with_their_sandbox_and_cleanup_removes_a_dead_runs(tmp_path: Path, daytona_double,
                                                                       monkeypatch) -> None:
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in daytona_double.env().items():
        monkeypatch.setenv(name, value)
    box = get_backend("daytona").create(SandboxSpec(name="snaps", environment_dir=None, image="debian:bookworm-slim",
                                                    cache_key="snaps", network_mode="no-network"))

    async def snapshot_then_stop() -> str:
        await box.start()
        try:
            ref = await box.snapshot()
            assert ref in daytona_double.double.snapshots
            return ref
        finally:
            await box.stop()

    ref = asyncio.run(snapshot_then_stop())
    assert ref not in daytona_double.double.snapshots, "stop() deletes the sandbox's snapshots"
    # a snapshot whose run was killed: its name names a process of this host that is gone
    dead = ref.replace(f"-{os.getpid()}-", "-999999999-")
    assert dead != ref
    daytona_double.double.add_snapshot(dead)
    alive = ref + "0"  # a snapshot of this process, which still runs: not stale
    daytona_double.double.add_snapshot(alive)
    assert dead in get_backend("daytona").stale_snapshots() and alive not in get_backend("daytona").stale_snapshots()
    dry = run_bench("sandbox", "cleanup", "--dry-run", "--id", dead, "--json", env=daytona_double.env())
    assert dry.returncode == 0, dry.stderr
    assert [row["id"] for row in json.loads(dry.stdout)["removed"]] == [dead]
    cleaned = run_bench("sandbox", "cleanup", "--id", dead, "--json", env=daytona_double.env())
    assert cleaned.returncode == 0, cleaned.stderr
    assert dead in cleaned.stdout and dead not in daytona_double.double.snapshots
    assert alive in daytona_double.double.snapshots
    assert get_backend("daytona").remove_snapshots([alive]) == {}


def test_a_model_calling_agent_reaches_the_gateway_over_the_exec_stream(tmp_path: Path, daytona_double) -> None:
    """An ACP agent in a Daytona sandbox (no host mounts): its ACP session and the model bridge's
    binary frames both travel over exec streams."""
    from tests.integration.test_model_bridge import (
        ASK_AND_DUMP_ENV,
        run_model_agent,
        sandbox_env,
        trial_dirs,
    )

    jobs, upstream = run_model_agent(tmp_path, "daytona", ASK_AND_DUMP_ENV,
                                     env=daytona_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert len(upstream.requests) == 1
    [trial] = trial_dirs(jobs)
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0, result.get("error")
    assert sandbox_env(trial)["OPENAI_API_KEY"].startswith("sk-benchflow-")


@pytest.mark.slow
def test_bench_branch_children_restore_daytona_snapshots(tmp_path: Path, daytona_double) -> None:
    """``bench branch`` on Daytona: children from one snapshot reach different rewards, a nested fork
    starts from its parent child's state, and no sandbox or snapshot is left."""
    from tests.conftest import FIXTURE_TASKS

    env = daytona_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    children = ["--child", "label=good,prompt=write done", "--child", "label=bad,prompt=write nope, really",
                "--child", "label=more,parent=good,prompt=append !", "--child", "label=same,parent=good,prompt=append "]
    snapshots_before = set(daytona_double.double.snapshots)
    done = run_bench("branch", "--tasks-dir", str(FIXTURE_TASKS / "branch-prompts"), "--agent", "oracle",
                     "--sandbox", "daytona", "--jobs-dir", str(tmp_path / "jobs"), *children, env=env)
    assert done.returncode == 0, done.stderr + done.stdout
    observed = {path.parent.name: json.loads(path.read_text())["reward"]
                for path in (tmp_path / "jobs").rglob("children/*/observation.json")}
    assert observed == {"good": 1.0, "bad": 0.0, "more": 0.5, "same": 1.0}
    labels = {"benchflow.job": str(next((tmp_path / "jobs").glob("branch-*")).resolve())}
    assert [box for box in daytona_double.double.boxes.values()
            if labels.items() <= (box.request.get("labels") or {}).items()] == []
    assert set(daytona_double.double.snapshots) == snapshots_before


def test_a_retained_snapshot_outlives_its_sandbox_and_starts_another(tmp_path: Path, daytona_double,
                                                                     monkeypatch) -> None:
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in daytona_double.env().items():
        monkeypatch.setenv(name, value)
    backend = get_backend("daytona")
    spec = SandboxSpec(name="retained", environment_dir=None, image="debian:bookworm-slim", cache_key="retained",
                       network_mode="no-network", workdir="/app")

    async def retain() -> str:
        box = backend.create(spec)
        await box.start()
        try:
            await box.exec(["sh", "-c", "echo saved > /app/state"])
            return await box.snapshot(retain=True)
        finally:
            await box.stop()

    async def start_from(ref: str) -> str:
        box = backend.create(spec)
        try:
            await box.restore(ref)  # before start: starts straight from the snapshot
            return (await box.exec(["cat", "/app/state"])).stdout
        finally:
            await box.stop()

    ref = asyncio.run(retain())
    assert ref in daytona_double.double.snapshots, "a retained snapshot outlives its sandbox"
    assert asyncio.run(start_from(ref)) == "saved\n"
    dead = ref.replace(f"-{os.getpid()}-", "-999999999-")
    daytona_double.double.add_snapshot(dead)
    assert dead not in backend.stale_snapshots(), "a retained snapshot is never stale"
    assert backend.remove_snapshots([ref, dead]) == {}
    assert ref not in daytona_double.double.snapshots and dead not in daytona_double.double.snapshots


def test_a_task_with_dockerfile_heredocs_scores_one(tmp_path: Path, daytona_double) -> None:
    """A published task's BuildKit heredocs (``RUN <<EOF`` under a bash SHELL, ``python3 - <<'PY'``,
    ``COPY <<EOF``) reach Daytona's builder as plain lines and context files, and its oracle scores 1."""
    jobs = tmp_path / "jobs"
    env = daytona_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    done = run_bench("run", str(COMPAT / "dockerfile-heredocs"), "--sandbox", "daytona", "--jobs-dir", str(jobs),
                     env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["error"] is None and result["rewards"] == {"reward": 1.0}, result
