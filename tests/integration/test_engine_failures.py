"""A Docker engine that dies mid-run: trials are recorded as infrastructure failures, retried,
and the job finishes on a rerun once an engine is back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchflow as bf
from benchflow import sandbox as sandboxes
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task


@pytest.mark.docker
def test_dead_engine_is_infra_failure_retried_then_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sandboxes.BACKENDS, "dying", "tests.doubles.dying_engine_backend:BACKEND")
    monkeypatch.setenv("BENCHFLOW_RETRY_BACKOFF_SEC", "0")
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    dead = bf.run(str(tmp_path / "tasks"), sandbox="dying", jobs_dir=str(jobs), max_retries=1)
    assert dead.exit_code == 1
    attempts = sorted(json.loads(p.read_text())["attempt"] for p in jobs.rglob("result.json"))
    assert attempts == [1, 2]  # an infrastructure failure is retried
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["rewards"] is None and result["error_category"] == "infra_failure"
    assert "Connection refused" in result["error"]

    back = bf.run(str(tmp_path / "tasks"), sandbox="docker", jobs_dir=str(jobs))
    assert back.exit_code == 0 and back.job_dir == dead.job_dir  # the same job, finished
    assert back.summary["passed"] == 1
