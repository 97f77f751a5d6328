"""``bench regrade`` end to end: a real run with a frozen workspace, a changed verifier, fresh sandboxes."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task
from tests.waiting import runs_in_container, wait_until

STRICTER = ('if [ "$(cat /app/hello.txt 2>/dev/null)" = "hello world" ]; then echo 1; else echo 0; fi '
            '> /logs/verifier/reward.txt')


def run_job(tmp_path: Path, *extra: str) -> Path:
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--job-name", "j",
                     *extra)
    assert done.returncode == 0, done.stderr
    return jobs / "j"


def trial_of(job: Path, task: str) -> Path:
    return next(job.glob(f"{task}__*"))


def regrade_containers(path: Path) -> list[str]:
    import docker

    mine = {"label": f"benchflow.regrade={path.resolve()}"}
    found = docker.from_env().containers.list(all=True, sparse=True, filters=mine)
    return [c.id for c in found]


def snapshot(job: Path) -> dict[Path, bytes]:
    """Every byte the run wrote: result.json and the trial's own verifier outputs."""
    return {p: p.read_bytes() for p in job.rglob("*") if p.is_file()
            and (p.name == "result.json" or p.parent.name == "verifier" and p.parent.parent.name != "regrade")}


@pytest.mark.docker
def test_changed_verifier_changes_the_regrade_not_the_result(tmp_path: Path) -> None:
    # The image puts seed.txt in the workspace and the agent deletes it: the regrade must not bring it back.
    make_task(tmp_path / "tasks", "hello", solve="rm /app/seed.txt && " + WRITE_HELLO,
              test="[ -e /app/seed.txt ] && { echo 0 > /logs/verifier/reward.txt; exit 0; }\n" + PASS_IF_HELLO,
              dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nRUN echo seed > /app/seed.txt\n")
    make_task(tmp_path / "tasks", "flaky", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    job = run_job(tmp_path, "--freeze-workspace")
    assert json.loads((trial_of(job, "hello") / "result.json").read_text())["rewards"] == {"reward": 1.0}
    before = snapshot(job)
    changed = tmp_path / "changed"
    shutil.copytree(tmp_path / "tasks", changed)
    (changed / "hello" / "verifier" / "test.sh").write_text("#!/bin/sh\n" + STRICTER + "\n")
    (changed / "flaky" / "verifier" / "test.sh").write_text("#!/bin/sh\necho broken\nexit 3\n")

    done = run_bench("regrade", str(job), "--tasks-dir", str(changed), "--reason", "stricter", "--json")
    assert done.returncode == 1, done.stderr  # one regrade errored (the broken verifier)
    summary = json.loads(done.stdout)
    assert summary["counts"] == {"trials": 2, "regraded": 1, "errored": 1, "not_regradable": 0, "changed": 1}
    hello = json.loads((trial_of(job, "hello") / "regrade.json").read_text())
    assert hello["kind"] == "benchflow.regrade" and hello["reason"] == "stricter"
    assert hello["original"]["rewards"] == {"reward": 1.0} and hello["rewards"] == {"reward": 0.0}
    assert hello["verifier_changed"] is True and hello["task_digest_original"] != hello["task_digest_now"]
    assert hello["sandbox"] == "docker" and hello["verifier_error"] is None
    assert (trial_of(job, "hello") / "regrade" / "verifier" / "reward.txt").read_text().strip() == "0"
    flaky = json.loads((trial_of(job, "flaky") / "regrade.json").read_text())
    assert flaky["rewards"] is None and flaky["verifier_error_category"] == "verifier_failure"
    assert "rc=3" in flaky["verifier_error"]
    assert snapshot(job) == before  # result.json and verifier/ byte-identical
    assert regrade_containers(job) == []

    # One trial, the task as recorded (unchanged): same score, summary in the trial folder.
    trial = trial_of(job, "hello")
    again = run_bench("eval", "regrade", str(trial))
    assert again.returncode == 0, again.stderr
    assert "Regraded 1 of 1 trial(s): 0 changed reward" in again.stdout
    block = json.loads((trial / "regrade.json").read_text())
    assert block["rewards"] == {"reward": 1.0} and block["verifier_changed"] is False
    assert json.loads((trial / "regrade-summary.json").read_text())["counts"]["regraded"] == 1

    # A frozen workspace edited after the fact is not trusted.
    (trial / "evidence" / "workspace" / "hello.txt").write_text("hello world\n")
    tampered = run_bench("regrade", str(trial), "--tasks-dir", str(changed), "--json")
    assert tampered.returncode == 1
    assert json.loads(tampered.stdout)["not_regradable"] == {"evidence_changed": 1}


@pytest.mark.docker
def test_a_run_without_frozen_workspace_is_not_regradable(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    job = run_job(tmp_path)
    done = run_bench("regrade", str(job))
    assert done.returncode == 1
    assert "not regradable" in done.stdout and "--freeze-workspace" in done.stdout
    summary = json.loads((job / "regrade-summary.json").read_text())
    assert summary["not_regradable"] == {"no_frozen_workspace": 1}
    assert not (trial_of(job, "hello") / "regrade.json").exists()


@pytest.mark.docker
def test_ctrl_c_removes_every_regrade_sandbox(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    job = run_job(tmp_path, "--freeze-workspace")
    (tmp_path / "tasks" / "hello" / "verifier" / "test.sh").write_text("#!/bin/sh\nsleep 60\n")
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "regrade", str(job)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: regrade_containers(job), what="the regrade sandbox")
    wait_until(lambda: runs_in_container(regrade_containers(job), "sleep 60"), what="the verifier to run")
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert regrade_containers(job) == []
    assert not (trial_of(job, "hello") / "regrade.json").exists()


@pytest.mark.local_sandbox
def test_regrade_on_the_local_sandbox_keeps_the_runs_seed(tmp_path: Path) -> None:
    task = make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "local", "--jobs-dir", str(jobs), "--job-name", "j",
                     "--freeze-workspace", "--seeds", "3")
    assert done.returncode == 0, done.stderr
    seeded = 'if [ "$BENCHFLOW_SEED" = 3 ]; then echo 0.5; else echo 0; fi > /logs/verifier/reward.txt'
    (task / "verifier" / "test.sh").write_text("#!/bin/sh\n" + seeded + "\n")
    regraded = run_bench("regrade", str(jobs / "j"), "--json")
    assert regraded.returncode == 0, regraded.stderr
    row = json.loads(regraded.stdout)["trials"][0]
    assert (row["status"], row["original_reward"], row["reward"], row["changed"]) == ("regraded", 1.0, 0.5, True)
    assert row["sandbox"] == "local" and row["verifier_changed"] is True
