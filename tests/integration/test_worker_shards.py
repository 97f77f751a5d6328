"""Worker shards end to end (``--worker-concurrency``): real Docker sandboxes, worker subprocesses,
one job folder; a worker killed with SIGKILL is retried; Ctrl-C stops every worker and the job resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task
from tests.waiting import runs_in_container, wait_until

pytestmark = pytest.mark.docker
TASKS = ["a", "b", "c", "d"]


def _tasks(root: Path, sleep: float, later: float | None = None) -> Path:
    """The four tasks; ``a`` and ``b`` (each worker's first) sleep ``sleep`` s, ``c`` and ``d`` ``later`` s."""
    for name in TASKS:
        pause = sleep if later is None or name in "ab" else later
        make_task(root / "tasks", name, solve=f"sleep {pause}; " + WRITE_HELLO, test=PASS_IF_HELLO)
    return root / "tasks"


def _job(jobs: Path) -> Path:
    found = [p for p in jobs.iterdir() if p.is_dir()]
    assert len(found) == 1, found
    return found[0]


def _finished_tasks(jobs: Path) -> list[str]:
    return sorted(json.loads(p.read_text())["task_name"] for p in jobs.rglob("result.json"))


def _containers(job: Path) -> list[dict]:
    """The engine's rows (no per-container inspect, so a container removed meanwhile is no error)."""
    import docker

    return docker.from_env().api.containers(all=True, filters={"label": f"benchflow.job={job.resolve()}"})


def _owner_pids(jobs: Path) -> set[str]:
    if not jobs.is_dir() or not any(p.is_dir() for p in jobs.iterdir()):
        return set()
    return {c["Labels"].get("benchflow.pid") for c in _containers(_job(jobs))}


def _both_solving(jobs: Path, needle: str) -> bool:
    """Two trials of the job are past their sandbox's start: each container runs ``needle`` (the oracle's sleep)."""
    if not jobs.is_dir() or not any(p.is_dir() for p in jobs.iterdir()):
        return False
    running = [c["Id"] for c in _containers(_job(jobs)) if c["State"] == "running"]
    return len(running) == 2 and all(runs_in_container([cid], needle) for cid in running)


def _workers(parent: int) -> list[int]:
    """Live worker processes started by ``parent``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        ppid = next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "")
        if ppid == str(parent) and "benchflow.shards.worker" in cmdline and "State:\tZ" not in status:
            out.append(int(entry.name))
    return out


def _when_size(get, n: int):
    """A probe for ``wait_until``: ``get()`` once it holds ``n`` items, else None."""
    def probe():
        value = get()
        return value if len(value) == n else None
    return probe


def _state(pid: int) -> str | None:
    """The process's state letter (``Z``: exited, not yet reaped); None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _start(tasks: Path, jobs: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "benchflow.cli", "run", str(tasks), "-s", "docker", "-j", "2",
           "--worker-concurrency", "1", "--worker-start-stagger-sec", "0", "--jobs-dir", str(jobs), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NO_COLOR": "1"})


def test_shards_write_one_job_folder_and_one_summary(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    proc = _start(_tasks(tmp_path, 2), jobs)
    owners = wait_until(_when_size(lambda: _owner_pids(jobs), 2), timeout=120,
                        what="two trials running at once")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert str(proc.pid) not in owners  # the trials ran in the worker processes, not in bench itself
    assert "2 worker(s), at most 1 trial(s) each" in err
    assert "Outcomes: 4 scored (4 passed, 0 failed), 0 unscored, 0 errored" in out
    job = _job(jobs)
    summary = json.loads((job / "summary.json").read_text())
    assert (summary["total"], summary["passed"]) == (4, 4)
    assert sorted(summary["trials"]) == TASKS and all(summary["trials"].values())
    assert _finished_tasks(jobs) == TASKS
    assert sorted(jobs.rglob("summary.json")) == sorted([job / "summary.json", jobs / "summary.json"])


def test_a_killed_worker_is_retried_and_every_task_finishes_once(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    proc = _start(_tasks(tmp_path, 3), jobs, "--worker-retries", "1")
    workers = wait_until(_when_size(lambda: _workers(proc.pid), 2), timeout=60,
                         what="two workers")
    wait_until(lambda: _both_solving(jobs, "sleep 3"), timeout=120, what="both workers' trials in their solution")
    victim = workers[0]
    os.kill(victim, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"was killed (signal {int(signal.SIGKILL)}); retrying its" in err
    assert "Outcomes: 4 scored (4 passed, 0 failed), 0 unscored, 0 errored" in out
    assert _finished_tasks(jobs) == TASKS  # every task exactly once
    summary = json.loads((_job(jobs) / "summary.json").read_text())
    assert (summary["total"], summary["passed"]) == (4, 4)
    # the killed worker's sandbox was removed; a finished trial's may go moments after the run exits
    wait_until(lambda: _containers(_job(jobs)) == [], what="the engine to remove every sandbox")


def test_ctrl_c_stops_every_worker_and_the_job_resumes(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    proc = _start(_tasks(tmp_path, 8, later=0), jobs)
    workers = wait_until(_when_size(lambda: _workers(proc.pid), 2), timeout=60,
                         what="two workers")
    wait_until(lambda: _both_solving(jobs, "sleep 8"), timeout=120, what="both workers' trials in their solution")
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    job = _job(jobs)
    assert _containers(job) == []
    assert not [(pid, _state(pid)) for pid in workers if _state(pid) not in {None, "Z"}]
    assert _finished_tasks(jobs) == []
    done = run_bench("eval", "resume", str(job), timeout=300)
    assert done.returncode == 0, done.stderr
    assert _finished_tasks(jobs) == TASKS


def test_a_job_budget_is_one_budget_for_every_worker(tmp_path: Path) -> None:
    """--max-rollouts 2 over two workers of four tasks: two rollouts in all, as one process would run."""
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(_tasks(tmp_path, 0)), "--jobs-dir", str(jobs), "-j", "2",
                     "--worker-concurrency", "1", "--worker-start-stagger-sec", "0", "--max-rollouts", "2",
                     timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(_finished_tasks(jobs)) == 2
    budget = json.loads((_job(jobs) / "summary.json").read_text())["budget"]
    assert budget["spent"]["rollouts"] == 2 and budget["reason"] == "max_rollouts"
    assert len(budget["not_started"]) == 2
