"""Multi-step tasks on Docker: steps in order in one sandbox, the min_reward gate, per-step records,
the mean/final roll-up, and bench results listing the steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, run_bench

pytestmark = pytest.mark.docker


def _trial(tmp_path: Path, task: str, *flags: str) -> Path:
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(FIXTURE_TASKS / task), "-s", "docker", "--jobs-dir", str(jobs), *flags)
    assert done.returncode in (0, 1), done.stderr
    return next(jobs.rglob("result.json")).parent


def test_step_two_fails_its_gate_and_step_three_never_runs(tmp_path: Path) -> None:
    trial = _trial(tmp_path, "multi-step-gate")
    result = json.loads((trial / "result.json").read_text())
    # step 2's verifier scores 0.5 only when step 1's file is still there (one sandbox) and step 1's
    # verifier files were gone when its agent ran
    assert [(s["name"], s["status"], s["reward"]) for s in result["steps"]] == [
        ("scaffold", "passed", 1.0), ("build", "gated", 0.5), ("polish", "not_run", None)]
    assert result["rewards"] == {"reward": 0.75}  # mean over the scored steps
    assert result["multi_step_reward_strategy"] == "mean"
    assert result["error"] is None and result["verifier_error"] is None
    assert any("min_reward" in w for w in result["verifier_warnings"])
    assert not (trial / "steps" / "03-polish").exists()
    one = json.loads((trial / "steps" / "01-scaffold" / "step.json").read_text())
    assert one["rewards"] == {"reward": 1.0} and one["prompt"].startswith("Create /app/base.txt")
    assert (trial / "steps" / "01-scaffold" / "artifacts" / "base.txt").read_text() == "base\n"
    assert (trial / "steps" / "02-build" / "setup" / "healthcheck.json").is_file()
    assert (trial / "steps" / "02-build" / "verifier" / "reward.txt").read_text().strip() == "0.5"

    shown = run_bench("results", str(trial.parent))
    assert "steps: 01 scaffold passed 1.00 · 02 build gated 0.50 (min 1.00) · 03 polish not run" in shown.stdout


def test_legacy_layout_rolls_up_the_final_step(tmp_path: Path) -> None:
    trial = _trial(tmp_path, "multi-step-legacy")
    result = json.loads((trial / "result.json").read_text())
    # step one uses the task-level tests/ (0.25), step two its own tests/ laid over them (1.0)
    assert [(s["name"], s["reward"]) for s in result["steps"]] == [("one", 0.25), ("two", 1.0)]
    assert result["rewards"] == {"reward": 1.0}


def test_a_failed_healthcheck_stops_the_trial(tmp_path: Path) -> None:
    import shutil

    task = tmp_path / "multi-step-gate"
    shutil.copytree(FIXTURE_TASKS / "multi-step-gate", task)
    (task / "steps" / "scaffold" / "oracle" / "solve.sh").write_text("#!/bin/sh\nexit 0\n")
    md = task / "task.md"
    md.write_text(md.read_text().replace("    min_reward: 1.0\n    artifacts", "    artifacts"))
    jobs = tmp_path / "jobs"
    run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(jobs))
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    # step 1 scores 0 with no gate; step 2's healthcheck (test -f /app/base.txt) never passes
    assert [s["status"] for s in result["steps"]] == ["failed", "errored", "not_run"]
    assert result["error_category"] == "sandbox_setup" and result["error"].startswith("step build: ")
    assert result["rewards"] == {"reward": 0.0}
