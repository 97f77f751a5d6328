"""sandbox.setup_commands and sandbox.healthcheck on Docker: they run before the agent, with their
own user/cwd/env, their capture reaches the verifier, and a failure stops the trial before the agent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, run_bench
from tests.taskgen import make_task

pytestmark = pytest.mark.docker


def run(tmp_path: Path, task: Path) -> tuple[dict, Path]:
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(jobs))
    assert done.returncode in (0, 1), done.stderr
    result = next(jobs.rglob("result.json"))
    return json.loads(result.read_text()), result.parent


def test_setup_commands_capture_and_healthcheck_run_before_the_agent(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "setup-capture"
    shutil.copytree(FIXTURE_TASKS / "setup-capture", task)
    result, trial = run(tmp_path, task)
    assert result["rewards"] == {"reward": 1.0}, (trial / "verifier" / "test-stdout.txt").read_text()
    setup = json.loads((trial / "setup" / "setup.json").read_text())
    assert [c["user"] for c in setup["commands"]] == [None, "nobody", None]
    assert setup["commands"][0]["captured"] == "/srv/seed"
    health = json.loads((trial / "setup" / "healthcheck.json").read_text())
    assert health["healthy"] and health["probes"] > 1  # the probe failed until the sidecar step finished


def _task_with_sandbox(root: Path, name: str, sandbox_yaml: str) -> Path:
    task = make_task(root, name, solve="echo agent-ran > /app/agent-ran", test="echo 1 > /logs/verifier/reward.txt")
    text = (task / "task.md").read_text().replace("sandbox: {network_mode: no-network}\n", sandbox_yaml)
    (task / "task.md").write_text(text)
    return task


def test_a_failing_setup_command_stops_the_trial_before_the_agent(tmp_path: Path) -> None:
    task = _task_with_sandbox(tmp_path / "tasks", "bad-setup", (
        "sandbox:\n  network_mode: no-network\n  setup_commands:\n"
        "    - command: echo setup-output-marker; exit 3\n"))
    result, trial = run(tmp_path, task)
    assert result["error_category"] == "sandbox_setup"
    assert "setup_commands[0] exited with rc=3" in result["error"] and "setup-output-marker" in result["error"]
    assert result["rewards"] is None and not (trial / "agent" / "oracle.txt").exists()
    assert "setup-output-marker" in (trial / "setup" / "command-0.txt").read_text()


def test_a_healthcheck_that_never_passes_stops_the_trial(tmp_path: Path) -> None:
    task = _task_with_sandbox(tmp_path / "tasks", "unhealthy", (
        "sandbox:\n  network_mode: no-network\n  healthcheck:\n"
        "    command: echo not-ready-marker; false\n    interval_sec: 0.1\n    retries: 2\n"))
    result, trial = run(tmp_path, task)
    assert result["error_category"] == "sandbox_setup"
    assert "healthcheck failed 3 times in a row" in result["error"] and "not-ready-marker" in result["error"]
    assert not (trial / "agent" / "oracle.txt").exists()
    assert json.loads((trial / "setup" / "healthcheck.json").read_text())["healthy"] is False
