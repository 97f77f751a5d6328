"""A separate verifier sandbox on Docker: the verifier sees only the frozen workspace, the declared
artifacts, /logs/artifacts and the run's includes — never the rest of the agent's sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, run_bench

pytestmark = pytest.mark.docker


def _run(tmp_path: Path, task: Path, name: str, *flags: str) -> dict:
    jobs = tmp_path / name
    done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(jobs), *flags)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(next(jobs.rglob("result.json")).read_text())


def _shared_copy(tmp_path: Path) -> Path:
    task = tmp_path / "separate-verifier"
    shutil.copytree(FIXTURE_TASKS / "separate-verifier", task)
    md = task / "task.md"
    md.write_text(md.read_text().replace(", sandbox_mode: separate", ""))
    return task


def test_the_verifier_sees_only_what_it_is_handed(tmp_path: Path) -> None:
    result = _run(tmp_path, FIXTURE_TASKS / "separate-verifier", "separate")
    assert result["rewards"] == {"reward": 1.0}, result
    trial = next((tmp_path / "separate").rglob("result.json")).parent
    manifest = json.loads((trial / "evidence" / "manifest.json").read_text())
    assert [f["path"] for f in manifest["files"]] == ["answer.txt"]  # the frozen workspace it received


def test_the_same_task_verified_in_its_own_sandbox_sees_the_leftovers(tmp_path: Path) -> None:
    task = _shared_copy(tmp_path)
    assert _run(tmp_path, task, "shared")["rewards"] == {"reward": 0.0}
    # --separate-verifier makes every task's verifier separate
    assert _run(tmp_path, task, "forced", "--separate-verifier")["rewards"] == {"reward": 1.0}
    assert _run(tmp_path, task, "flag", "--verifier-sandbox", "separate")["rewards"] == {"reward": 1.0}


def test_an_include_reaches_the_verifier(tmp_path: Path) -> None:
    result = _run(tmp_path, FIXTURE_TASKS / "separate-verifier", "incl", "--separate-verifier-include", "/root")
    assert result["rewards"] == {"reward": 0.0}  # /root/outside.txt was handed over, as asked


def test_a_task_it_cannot_run_refuses_the_run(tmp_path: Path) -> None:
    done = run_bench("run", str(FIXTURE_TASKS / "multi-step-gate"), "-s", "docker", "--jobs-dir", str(tmp_path),
                     "--verifier-sandbox", "separate", "--dry-run")
    assert done.returncode == 1
    assert "refuse: multi-step-gate: steps: a multi-step task verifies each step" in done.stderr
    task = tmp_path / "own-service"
    shutil.copytree(FIXTURE_TASKS / "separate-verifier", task)
    md = task / "task.md"
    md.write_text(md.read_text().replace("sandbox_mode: separate", "sandbox_mode: separate, service: db"))
    done = run_bench("check", str(task), "--level", "runtime-capability", "--sandbox", "docker")
    assert done.returncode != 0 and "a separate verifier sandbox has only its own main" in done.stdout + done.stderr
