"""``bench run --sandbox modal`` and ``bench sandbox list|cleanup`` end to end, against the Modal gRPC API
double (tests/doubles/modal_api_double.py; each sandbox a container on the local engine)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

COMPAT = Path(__file__).parents[1] / "fixtures" / "compat"

pytestmark = pytest.mark.docker


def test_oracle_run_scores_one_and_leaves_no_sandbox(tmp_path: Path, modal_double) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    env = modal_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    before = len(modal_double.state.created)
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "modal", "--jobs-dir", str(jobs), env=env)
    assert done.returncode == 0, done.stderr
    assert "Outcomes: 1 scored (1 passed, 0 failed), 0 unscored, 0 errored" in done.stdout
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["rewards"] == {"reward": 1.0} and result["environment"] == "modal"
    assert len(modal_double.state.created) > before, "the run made its sandbox through Modal's API"
    listed = run_bench("sandbox", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [row for row in json.loads(listed.stdout) if row["sandbox"] == "modal"] == []


def test_sandbox_list_and_cleanup_find_what_a_dead_run_left(tmp_path: Path, modal_double, monkeypatch) -> None:
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in modal_double.env().items():
        monkeypatch.setenv(name, value)
    backend = get_backend("modal")
    box = backend.create(SandboxSpec(name="left", environment_dir=None, image="debian:bookworm-slim",
                                     cache_key="left", network_mode="no-network",
                                     labels={"benchflow.job": f"left-{tmp_path.name}", "benchflow.trial": "t1"}))
    # As if a killed run had made it: its owner is a pid that does not run.
    box.labels["benchflow.pid"] = "999999999"
    asyncio.run(box.start())
    try:
        env = modal_double.env()
        listed = run_bench("sandbox", "list", "--json", env=env)
        assert listed.returncode == 0, listed.stderr
        rows = [row for row in json.loads(listed.stdout) if row["id"] == box.sandbox_id]
        assert [(row["sandbox"], row["trial"], row["owner_alive"]) for row in rows] == [("modal", "t1", False)]
        cleaned = run_bench("sandbox", "cleanup", "--id", box.sandbox_id, env=env)
        assert cleaned.returncode == 0, cleaned.stderr
        assert not backend.exists(box.sandbox_id)
    finally:
        asyncio.run(box.stop())


def test_what_a_sandbox_asks_modal_for_and_a_failed_build(tmp_path: Path, modal_double, monkeypatch) -> None:
    from benchflow.errors import BuildError
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in modal_double.env().items():
        monkeypatch.setenv(name, value)
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM debian:bookworm-slim\nCOPY note.txt /opt/note.txt\n")
    (env / "note.txt").write_text("from the context\n")
    spec = SandboxSpec(name="asks", environment_dir=env, cache_key="asks", network_mode="no-network", cpus=1.5,
                       memory_mb=3000, env={"TASK_VAR": "1"}, workdir="/opt",
                       labels={"benchflow.job": "j-asks", "benchflow.trial": "t-asks"})
    box = get_backend("modal").create(spec)

    async def look() -> tuple[str, str]:
        await box.start()
        try:
            return (await box.exec(["cat", "note.txt"])).stdout, (await box.exec(["printenv", "TASK_VAR"])).stdout
        finally:
            await box.stop()

    assert asyncio.run(look()) == ("from the context\n", "1\n")
    request = modal_double.state.created[-1]
    definition = request.definition
    assert definition.network_access.network_access_type == definition.network_access.BLOCKED
    assert (definition.resources.milli_cpu, definition.resources.milli_cpu_max) == (1500, 1500)
    assert (definition.resources.memory_mb, definition.resources.memory_mb_max) == (3000, 3000)
    tags = {tag.tag_name: tag.tag_value for tag in request.tags}
    assert {"benchflow.job": "j-asks", "benchflow.trial": "t-asks", "benchflow.backend": "modal",
            "benchflow.owned": "true"}.items() <= tags.items()
    assert {key: value for source in request.secret_sources for key, value in source.env.contents.items()} == {
        "TASK_VAR": "1"}
    assert not get_backend("modal").exists(box.sandbox_id)

    (env / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN echo the build broke; exit 3\n")
    made = len(modal_double.state.created)
    broken = get_backend("modal").create(SandboxSpec(name="broken", environment_dir=env, cache_key="broken",
                                                     network_mode="no-network"))
    with pytest.raises(BuildError, match="could not build"):
        asyncio.run(broken.start())
    assert len(modal_double.state.created) == made, "no sandbox is made for an image that did not build"


def test_without_a_token_or_with_a_wrong_one_modal_is_unavailable(modal_double, monkeypatch) -> None:
    from benchflow.sandbox import get_backend

    monkeypatch.delenv("MODAL_TOKEN_ID", raising=False)
    monkeypatch.delenv("MODAL_TOKEN_SECRET", raising=False)
    ok, why = get_backend("modal").available()
    assert not ok and "MODAL_TOKEN_ID" in why
    for name, value in modal_double.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MODAL_TOKEN_SECRET", "wrong")
    ok, why = get_backend("modal").available()
    assert not ok and "refused MODAL_TOKEN_ID/MODAL_TOKEN_SECRET" in why


def test_a_run_without_a_token_is_refused_in_one_line(tmp_path: Path) -> None:
    """The run card refuses it before anything starts (exit 1: the contracts' code for a plan that cannot run
    here, a missing credential among them, as for every backend)."""
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    done = run_bench("run", str(tmp_path / "tasks"), "--sandbox", "modal", "--jobs-dir", str(tmp_path / "jobs"),
                     env={"MODAL_TOKEN_ID": "", "MODAL_TOKEN_SECRET": ""})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MODAL_TOKEN_ID" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_model_calling_agent_reaches_the_gateway_over_the_exec_stream(tmp_path: Path, modal_double) -> None:
    """An ACP agent in a Modal sandbox (no host mounts): its ACP session and the model bridge's
    binary frames both travel over Modal exec streams (stdin writes, stdout reads)."""
    from tests.integration.test_model_bridge import (
        ASK_AND_DUMP_ENV,
        run_model_agent,
        sandbox_env,
        trial_dirs,
    )

    jobs, upstream = run_model_agent(tmp_path, "modal", ASK_AND_DUMP_ENV,
                                     env=modal_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert len(upstream.requests) == 1
    [trial] = trial_dirs(jobs)
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0, result.get("error")
    assert sandbox_env(trial)["OPENAI_API_KEY"].startswith("sk-benchflow-")


def test_a_task_that_asks_for_gpus_goes_to_modal_by_default(tmp_path: Path, modal_double) -> None:
    """Without --sandbox, a GPU task runs on Modal when its token is set (the reference's default rule); the
    SDK sends GPU sandboxes through its V1 create, whose env comes as a secret. The double gives no GPU:
    it records what was asked."""
    task = make_task(tmp_path / "tasks", "gpu", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    card = task / "task.md"
    card.write_text(card.read_text().replace("sandbox: {network_mode: no-network}",
                                             "sandbox: {network_mode: no-network, gpus: 2, gpu_types: [A100]}"))
    jobs = tmp_path / "jobs"
    env = modal_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    done = run_bench("run", str(tmp_path / "tasks"), "--jobs-dir", str(jobs), env=env)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "default for tasks that ask for GPUs" in done.stderr, done.stderr
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["rewards"] == {"reward": 1.0} and result["environment"] == "modal"
    gpu = modal_double.state.created[-1].definition.resources.gpu_config
    assert (gpu.gpu_type, gpu.count) == ("A100", 2)
    assert "SandboxCreate" in modal_double.state.calls


@pytest.mark.slow
def test_bench_branch_children_restore_modal_snapshots(tmp_path: Path, modal_double) -> None:
    """``bench branch`` on Modal: children start from filesystem snapshots (images) of one sandbox, reach
    different rewards, a nested fork starts from its parent child's state, and no sandbox is left."""
    from tests.conftest import FIXTURE_TASKS

    env = modal_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    children = ["--child", "label=good,prompt=write done", "--child", "label=bad,prompt=write nope, really",
                "--child", "label=more,parent=good,prompt=append !", "--child", "label=same,parent=good,prompt=append "]
    done = run_bench("branch", "--tasks-dir", str(FIXTURE_TASKS / "branch-prompts"), "--agent", "oracle",
                     "--sandbox", "modal", "--jobs-dir", str(tmp_path / "jobs"), *children, env=env)
    assert done.returncode == 0, done.stderr + done.stdout
    observed = {path.parent.name: json.loads(path.read_text())["reward"]
                for path in (tmp_path / "jobs").rglob("children/*/observation.json")}
    assert observed == {"good": 1.0, "bad": 0.0, "more": 0.5, "same": 1.0}
    assert "TaskSnapshotFilesystem" in modal_double.state.calls
    job = str(next((tmp_path / "jobs").glob("branch-*")).resolve())
    assert [box.id for box in modal_double.state.boxes.values()
            if box.tags.get("benchflow.job") == job and box.result is None] == []


def test_listing_makes_nothing_and_finds_nothing_before_the_first_sandbox(modal_double, monkeypatch) -> None:
    from benchflow.sandbox import get_backend

    for name, value in modal_double.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BENCHFLOW_MODAL_APP", "never-used")
    assert get_backend("modal").available()[0], "a token Modal accepts works before any app exists"
    assert get_backend("modal").leftovers() == []
    assert "never-used" not in modal_double.state.apps, "looking does not make the app"


def test_large_stdin_and_a_command_that_does_not_read_it(modal_double, monkeypatch) -> None:
    from benchflow.sandbox import SandboxSpec, get_backend

    for name, value in modal_double.env().items():
        monkeypatch.setenv(name, value)
    box = get_backend("modal").create(SandboxSpec(name="stdin", environment_dir=None, image="debian:bookworm-slim",
                                                  cache_key="stdin", network_mode="no-network", workdir="/tmp"))
    data = bytes(range(256)) * (12 << 12)  # 12 MiB, every byte value

    async def run() -> tuple[str, int]:
        await box.start()
        try:
            counted = await box.exec(["sh", "-c", "cat | wc -c"], stdin=data)
            ignored = await box.exec(["true"], stdin=data)
            return counted.stdout.strip(), ignored.return_code
        finally:
            await box.stop()

    assert asyncio.run(run()) == (str(len(data)), 0)


def test_a_task_with_dockerfile_heredocs_scores_one(tmp_path: Path, modal_double) -> None:
    """A published task's BuildKit heredocs (``RUN <<EOF`` under a bash SHELL, ``python3 - <<'PY'``,
    ``COPY <<EOF``) reach Modal's builder as plain lines and context files, and its oracle scores 1."""
    jobs = tmp_path / "jobs"
    env = modal_double.env() | {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    done = run_bench("run", str(COMPAT / "dockerfile-heredocs"), "--sandbox", "modal", "--jobs-dir", str(jobs),
                     env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["error"] is None and result["rewards"] == {"reward": 1.0}, result
