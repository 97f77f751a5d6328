"""Declared artifacts and /logs/artifacts are copied out after the agent, safely (Docker)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, run_bench

pytestmark = pytest.mark.docker


def test_artifacts_are_copied_out_with_excludes_and_without_escapes(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "artifacts-out"
    shutil.copytree(FIXTURE_TASKS / "artifacts-out", task)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(jobs))
    assert done.returncode == 0, done.stderr
    trial = next(jobs.rglob("result.json")).parent
    artifacts = trial / "artifacts"
    assert (artifacts / "single.txt").read_text() == "summary-marker-77aa\n"
    assert (artifacts / "note.txt").read_text() == "agent-note-marker\n"  # /logs/artifacts
    out = artifacts / "reports" / "out"
    assert (out / "report.txt").read_text() == "report-marker-3c1d\n"
    assert (out / "sub" / "nested.txt").is_file()
    assert not (out / "debug.log").exists() and not (out / "cache").exists()  # excluded
    assert not (out / "passwd-link").exists() and not (trial / "escape").exists()
    assert not any(p.is_symlink() for p in artifacts.rglob("*"))
    note = json.loads((trial / "result.json").read_text())["copy_out_info"]["artifacts"]
    assert note["/app/missing"] == {"missing": "/app/missing"}
    assert "leads out" in note["/etc/hostname"]["refused"]
    assert note["/app/out"]["excluded"] == 2 and note["/app/out"]["copy"]["n_dropped"] == 1


@pytest.mark.parametrize("what", ["rm -rf /logs/agent /logs/artifacts",
                                  "rm -rf /logs/artifacts && ln -s /etc /logs/artifacts"])
def test_an_agent_that_removes_or_relinks_its_log_folders_is_still_scored(tmp_path: Path, what: str) -> None:
    """The agent's logs and artifacts come out in one read of /logs; an agent that removed them, or made
    one a link out, gets its trial scored as any other (nothing of /etc comes out), not an error."""
    from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

    make_task(tmp_path / "tasks", "gone", solve=f"{WRITE_HELLO} && {what}", test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs))
    assert done.returncode == 0, done.stdout + done.stderr
    trial = next(jobs.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"]["reward"] == 1.0 and result["error"] is None
    assert not any((trial / "artifacts").rglob("passwd")) and not any(p.is_symlink() for p in trial.rglob("*"))
