"""bench run --config with a Harbor job.yaml or config.json, as a user types it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task
from tests.harbor_job_configs import harbor_config_json


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    for name in ("hello", "hello-again", "other"):
        make_task(tmp_path / "tasks", name, solve=WRITE_HELLO, test=PASS_IF_HELLO)
    return tmp_path / "tasks"


def test_a_harbor_config_json_plans_its_run_and_flags_win(bench, tasks: Path, tmp_path: Path) -> None:
    doc = harbor_config_json(n_concurrent_trials=3, n_attempts=2, jobs_dir=str(tmp_path / "jobs"))
    doc["datasets"][0].update(path=str(tasks), task_names=["hello*"])
    doc["agents"][0]["name"] = "nop"
    config = tmp_path / "config.json"
    config.write_text(json.dumps(doc))
    plan = bench("run", "--config", str(config), "--dry-run", "-s", "docker")
    assert plan.stdout, plan.stderr
    got = json.loads(plan.stdout)
    assert (got["agent"], got["concurrency"], got["trials"], got["sandbox"]) == ("nop", 3, 2, "docker")
    assert got["jobs_dir"] == str(tmp_path / "jobs") and got["retry"]["attempts"] == 0
    assert [t["name"] for t in got["tasks"]] == ["hello", "hello-again"]
    flagged = json.loads(bench("run", "--config", str(config), "--dry-run", "-s", "docker", "-j", "1", "-a",
                               "oracle").stdout)
    assert (flagged["agent"], flagged["concurrency"]) == ("oracle", 1)


def test_a_harbor_key_that_does_not_map_is_one_line_and_exit_2(bench, tasks: Path, tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    config.write_text(f"datasets: [{{path: {tasks}}}]\nenvironment: {{type: e2b}}\n")
    done = bench("run", "--config", str(config), "--dry-run")
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: {config}: environment.type: 'e2b': BenchFlow has no e2b sandbox; use one "
                                   "of docker, podman, daytona, modal, apple-container (or drop the key for the "
                                   "default)")
