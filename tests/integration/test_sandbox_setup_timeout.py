"""``--sandbox-setup-timeout``: how long the setup inside a started sandbox (its user, ``/logs``) may take; a
run config's ``sandbox_setup_timeout`` is kept unless the flag is given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.errors import SandboxError
from benchflow.sandbox import SandboxSpec, get_backend
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

pytestmark = pytest.mark.docker


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    return tmp_path / "tasks"


def _run_config(job_root: Path) -> dict:
    (evaluation,) = job_root.rglob("evaluation.json")
    return json.loads(evaluation.read_text())["run_config"]


def test_the_flag_reaches_the_run_and_the_run_scores(bench, tasks: Path, tmp_path: Path) -> None:
    done = bench("run", str(tasks), "--sandbox", "docker", "--sandbox-setup-timeout", "45",
                 "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 0, done.stderr
    assert _run_config(tmp_path / "jobs")["sandbox_setup_timeout_sec"] == 45
    (result,) = (tmp_path / "jobs").rglob("hello__*/result.json")
    assert json.loads(result.read_text())["rewards"]["reward"] == 1.0


def test_a_run_config_s_value_is_kept_and_the_flag_wins(bench, tasks: Path, tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"tasks_dir: {tasks}\nsandbox: docker\nsandbox_setup_timeout: 2m\n")
    kept = bench("run", "--config", str(config), "--jobs-dir", str(tmp_path / "kept"))
    assert kept.returncode == 0, kept.stderr
    assert _run_config(tmp_path / "kept")["sandbox_setup_timeout_sec"] == 120
    flag = bench("run", "--config", str(config), "--sandbox-setup-timeout", "30", "--jobs-dir", str(tmp_path / "flag"))
    assert flag.returncode == 0, flag.stderr
    assert _run_config(tmp_path / "flag")["sandbox_setup_timeout_sec"] == 30


def test_zero_is_one_line_and_exit_2(bench, tasks: Path) -> None:
    done = bench("run", str(tasks), "--sandbox-setup-timeout", "0", "--dry-run")
    assert done.returncode == 2 and "--sandbox-setup-timeout" in done.stderr and "Traceback" not in done.stderr


async def test_a_setup_past_its_timeout_fails_naming_the_flag_and_leaves_no_container() -> None:
    import docker

    backend = get_backend("docker")
    spec = SandboxSpec(name="setup-timeout", environment_dir=None, cache_key="setup-timeout",
                       image="benchflow/python-slim:3.11-bookworm", network_mode="no-network",
                       setup_timeout_sec=0.001, labels={"benchflow.test": "setup-timeout"})
    box = backend.create(spec)
    with pytest.raises(SandboxError, match=r"did not finish within 0\.001s \(--sandbox-setup-timeout\)"):
        await box.start()
    await box.stop()
    left = docker.from_env().containers.list(all=True, filters={"label": "benchflow.test=setup-timeout"})
    assert left == []
