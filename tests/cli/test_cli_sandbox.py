"""``bench sandbox create|list|attach|release|cleanup`` as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TASK_MD = """---
schema_version: '1.3'
agent: {timeout_sec: 60.0}
verifier: {timeout_sec: 30.0}
sandbox: {network_mode: no-network, cpus: 0.5, memory_mb: 512}
---

## prompt

Write `done` into /app/answer.txt.
"""


def make_task(root: Path, marker: str) -> Path:
    task = root / "cli-sandbox-task"
    (task / "environment").mkdir(parents=True)
    (task / "task.md").write_text(TASK_MD)
    (task / "environment" / "Dockerfile").write_text(
        f"FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo {marker} > /app/marker\n")
    return task


@pytest.mark.docker
def test_create_list_and_cleanup_by_id(bench, tmp_path):
    created = bench("sandbox", "create", str(make_task(tmp_path, "m1")))
    assert created.returncode == 0, created.stderr
    assert "not started" in created.stdout
    short = created.stdout.split("--id ")[-1].strip()
    listed = bench("sandbox", "list", "--json")
    rows = [row for row in json.loads(listed.stdout) if row["id"].startswith(short)]
    assert len(rows) == 1 and rows[0]["state"] == "created" and rows[0]["owner"] == "none"
    assert rows[0]["task"] == "cli-sandbox-task"
    table = bench("sandbox", "list")
    assert short in table.stdout and "NAME" in table.stdout
    removed = bench("sandbox", "cleanup", "--id", short)
    assert removed.returncode == 0 and "Removed" in removed.stdout
    after = json.loads(bench("sandbox", "list", "--json").stdout)
    assert not [row for row in after if row["id"].startswith(short)]


@pytest.mark.docker
def test_cleanup_with_an_unknown_id_fails(bench):
    result = bench("sandbox", "cleanup", "--id", "no-such-sandbox-0000")
    assert result.returncode == 1
    assert "no BenchFlow sandbox" in result.stderr


@pytest.mark.docker
def test_attach_runs_a_command_as_root_and_release_deletes(bench, tmp_path):
    import asyncio

    from benchflow.sandbox import SandboxSpec, get_backend

    spec = SandboxSpec(name="kept-cli", environment_dir=None, cache_key="x", image="debian:bookworm-slim",
                       network_mode="no-network")
    box = get_backend("docker").create(spec)

    async def keep() -> dict:
        await box.start()
        return await box.keep()

    record = asyncio.run(keep())
    trial = tmp_path / "trial-1"
    trial.mkdir()
    (trial / "kept-sandbox.json").write_text(json.dumps(record | {"trial": "trial-1", "created_at": "x"}))
    try:
        result = bench("sandbox", "attach", str(trial), "--", "sh", "-c", "id -un; echo oops >&2; exit 5")
        assert result.returncode == 5, result.stderr
        assert result.stdout.strip() == "root" and "oops" in result.stderr
        direct = bench("sandbox", "attach", str(trial / "kept-sandbox.json"), "--", "true")
        assert direct.returncode == 0
        listed = json.loads(bench("sandbox", "list", "--json").stdout)
        assert any(row["id"] == record["sandbox_id"] and row["kept"] for row in listed)
        released = bench("sandbox", "release", str(trial))
        assert released.returncode == 0, released.stderr
        assert not (trial / "kept-sandbox.json").exists()
        from benchflow.sandbox.engine_api import NotFound

        with pytest.raises(NotFound):
            box.api.inspect_container(record["sandbox_id"])
    finally:
        bench("sandbox", "cleanup", "--id", record["sandbox_id"])  # after a failure only; fails harmlessly


def test_attach_without_a_kept_sandbox_is_a_one_line_user_error(bench, tmp_path):
    result = bench("sandbox", "attach", str(tmp_path), "--", "true")
    assert result.returncode == 2
    assert "kept-sandbox.json" in result.stderr and "Traceback" not in result.stderr


def test_create_refuses_an_unknown_backend(bench, tmp_path):
    result = bench("sandbox", "create", str(make_task(tmp_path, "m2")), "--sandbox", "moon")
    assert result.returncode == 2
    assert "--sandbox moon" in result.stderr


def test_create_on_a_backend_that_cannot_keep_one_says_why_in_one_line(bench, tmp_path):
    task = str(make_task(tmp_path, "m3"))
    for sandbox, why in (("modal", "cannot be made without starting it"),
                         ("local", "ends with that process")):
        result = bench("sandbox", "create", task, "--sandbox", sandbox)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and why in result.stderr and "Traceback" not in result.stderr


def test_cache_on_a_backend_without_one_says_why(bench, tmp_path):
    result = bench("cache", "list", "--sandbox", "modal", env={"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 2
    assert "no call to list or delete them" in result.stderr and result.stderr.count("\n") == 1


def _without_docker(tmp_path: Path) -> dict[str, str]:
    """An environment where no Docker-API engine (Docker, Podman) answers and the local cache is empty."""
    return {"BENCHFLOW_CACHE": str(tmp_path / "cache"), "DOCKER_HOST": "unix:///nonexistent/bf-cli-test.sock",
            "BENCHFLOW_REMOTE_DOCKER_HOST": "", "BENCHFLOW_PODMAN_HOST": ""}


def test_list_and_cleanup_work_without_a_docker_engine(bench, tmp_path):
    env = _without_docker(tmp_path)
    listed = bench("sandbox", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    assert "note: skipped docker: no Docker engine answers" in listed.stderr
    cleaned = bench("sandbox", "cleanup", env=env)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "Nothing to clean up." in cleaned.stdout


def test_an_unreachable_remote_engine_is_an_error_after_the_rest(bench, tmp_path):
    env = _without_docker(tmp_path) | {"BENCHFLOW_REMOTE_DOCKER_HOST": "unix:///nonexistent/bf-remote.sock"}
    listed = bench("sandbox", "list", "--json", env=env)
    assert listed.returncode == 1
    assert json.loads(listed.stdout) == []
    assert "error: remote-docker: no Docker engine answers at unix:///nonexistent/bf-remote.sock" in listed.stderr


def test_a_local_state_folder_without_owner_goes_only_after_max_age(bench, tmp_path):
    env = _without_docker(tmp_path)
    stray = tmp_path / "cache" / "local" / "sandboxes" / "half-made-0000abcd"
    stray.mkdir(parents=True)  # what a crash between mkdir and owner.json leaves
    listed = json.loads(bench("sandbox", "list", "--json", env=env).stdout)
    assert [(r["id"], r["engine"], r["owner"], r["owner_alive"]) for r in listed] == [
        ("half-made-0000abcd", "local", "none", None)]
    young = bench("sandbox", "cleanup", "--max-age", "60", env=env)
    assert young.returncode == 0, young.stderr
    assert "Kept local sandbox half-made-0000abcd: no recorded owner" in young.stdout
    assert stray.is_dir()
    old = bench("sandbox", "cleanup", "--max-age", "0", env=env)
    assert "Removed local sandbox half-made-0000abcd" in old.stdout
    assert not stray.exists()


def test_cache_commands_know_the_local_sandbox(bench, tmp_path):
    env = _without_docker(tmp_path)
    listed = bench("cache", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    only_local = bench("cache", "clean", "--sandbox", "local", env=env)
    assert only_local.returncode == 0 and "Nothing to clean." in only_local.stdout
    assert "skipped Docker" not in only_local.stderr, "an explicit --sandbox local does not ask Docker"
    wrong = bench("cache", "list", "--sandbox", "moon", env=env)
    assert wrong.returncode == 2
    assert "--sandbox moon" in wrong.stderr and "local" in wrong.stderr



def test_list_and_cleanup_work_without_the_cloud_sdks(bench, tmp_path):
    """A plain install has no boto3: ``bench sandbox list`` / ``cleanup`` skip that backend instead of
    crashing on its import (it did, with a traceback)."""
    for name in ("boto3", "botocore"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('no module named {name} (test)')\n")
    env = {"PYTHONPATH": str(tmp_path), "BENCHFLOW_CACHE": str(tmp_path / "cache")}
    for args in (["sandbox", "list", "--json"], ["sandbox", "cleanup", "--dry-run"]):
        done = bench(*args, env=env)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "crashed" not in done.stderr
