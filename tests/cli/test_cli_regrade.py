"""``bench regrade`` as a user types it, on hand-written job folders (no sandbox starts here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fixtures.jobgen import TrialSpec, write_job


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    return lines[0]


def test_bad_path_exits_2_with_one_line(bench, tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    assert "no such folder" in one_line_error(bench("regrade", str(tmp_path / "nope")))
    assert "not a folder" in one_line_error(bench("eval", "regrade", str(tmp_path / "file.txt")))
    assert "not a job folder" in one_line_error(bench("regrade", str(tmp_path / "empty")))
    write_job(tmp_path / "jobs", "j1", [TrialSpec("t1")])
    write_job(tmp_path / "jobs", "j2", [TrialSpec("t1")])
    assert "give one of them" in one_line_error(bench("regrade", str(tmp_path / "jobs")))


def test_bad_flags_exit_2(bench, tmp_path: Path) -> None:
    job = write_job(tmp_path, "job", [TrialSpec("t1")])
    assert "--tasks-dir" in one_line_error(bench("regrade", str(job), "--tasks-dir", str(tmp_path / "none")))
    (tmp_path / "no-tasks").mkdir()
    assert "holds no task" in one_line_error(bench("regrade", str(job), "--tasks-dir", str(tmp_path / "no-tasks")))
    bad = bench("regrade", str(job), "--concurrency", "0")
    assert bad.returncode == 2 and "--concurrency" in bad.stderr
    assert not (job / "regrade-summary.json").exists()


def test_trials_that_cannot_be_regraded_are_listed_with_reasons(bench, tmp_path: Path) -> None:
    workspace = {"evidence/workspace/out.txt": "hello\n",
                 "evidence/manifest.json": json.dumps({"workdir": "/app", "files": []})}
    job = write_job(tmp_path, "job", [
        TrialSpec("plain", 1.0, suffix="aaaa0001"),
        TrialSpec("cut", None, finished=False, suffix="aaaa0002", files=workspace),
        TrialSpec("moved", 0.0, suffix="aaaa0003", files=workspace),
    ])
    before = {p: p.read_bytes() for p in job.rglob("result.json")}
    done = bench("regrade", str(job), "--json", "--reason", "stricter test")
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["kind"] == "benchflow.regrade-summary" and summary["reason"] == "stricter test"
    assert summary["counts"] == {"trials": 3, "regraded": 0, "errored": 0, "not_regradable": 3, "changed": 0}
    assert summary["not_regradable"] == {"no_frozen_workspace": 1, "unfinished": 1, "task_not_found": 1}
    rows = {r["task_name"]: r for r in summary["trials"]}
    assert "--freeze-workspace" in rows["plain"]["reason"]
    assert "tasks/moved" in rows["moved"]["reason"] and "--tasks-dir" in rows["moved"]["reason"]
    assert rows["moved"]["original_reward"] == 0.0 and rows["moved"]["reward"] is None
    assert json.loads((job / "regrade-summary.json").read_text()) == summary
    assert {p: p.read_bytes() for p in job.rglob("result.json")} == before
    assert not list(job.rglob("regrade.json"))
    assert "not regradable" in done.stderr  # one progress line per trial


def test_a_task_that_no_longer_loads_is_not_regradable(bench, tmp_path: Path) -> None:
    workspace = {"evidence/workspace/out.txt": "x", "evidence/manifest.json": "{}"}
    job = write_job(tmp_path, "job", [TrialSpec("broken", 1.0, files=workspace)])
    task = tmp_path / "tasks" / "broken"
    task.mkdir(parents=True)
    (task / "task.md").write_text("---\nverifier: [not, a, mapping]\n---\n\n## prompt\n\nHi.\n")
    done = bench("regrade", str(job), "--tasks-dir", str(tmp_path / "tasks"))
    assert done.returncode == 1, done.stderr
    assert "task_invalid" in done.stdout and "does not load" in done.stdout
    assert "Regraded 0 of 1 trial(s)" in done.stdout


def test_a_sandbox_that_cannot_run_exits_2_before_anything_starts(bench, tmp_path: Path) -> None:
    from tests.taskgen import PASS_IF_HELLO, make_task

    make_task(tmp_path / "tasks", "hello", test=PASS_IF_HELLO)
    workspace = {"evidence/workspace/hello.txt": "hello\n", "evidence/manifest.json": "{}"}
    job = write_job(tmp_path, "job", [TrialSpec("hello", 1.0, files=workspace, config={"environment": "daytona"})])
    tasks = ("--tasks-dir", str(tmp_path / "tasks"))
    recorded = one_line_error(bench("regrade", str(job), *tasks))
    assert "daytona" in recorded and "--sandbox" in recorded
    assert "--sandbox nope" in one_line_error(bench("regrade", str(job), *tasks, "--sandbox", "nope"))
    assert not (job / "regrade-summary.json").exists() and not list(job.rglob("regrade.json"))
