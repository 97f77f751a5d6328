"""A task that reads host variables (``${NAME}``) and one that points outside itself, run for real.

Without ``--allow-task-env`` the run is refused before anything starts; with it the task gets the
value, and the value is nowhere in the job folder (every file read, no link followed). A regrade
holds the job's lock: a run of the same job is refused while it runs.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from benchflow.jobs.layout import JobPaths
from benchflow.results.reader import job_is_running
from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task
from tests.waiting import wait_until

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker),
            pytest.param("local", marks=pytest.mark.local_sandbox)]
SECRET = "hostsecret-" + "Q7" * 12

# The verifier scores 1 only when it received the host value and the default (not the host's UNNAMED);
# it prints both, writes them into /logs/verifier, and the oracle copies the sandbox env into /logs/agent.
VERIFIER = ('echo "token=$TOKEN mode=$MODE"; echo "$TOKEN" > /logs/verifier/copy.txt; '
            'echo "{\\"note\\": \\"$TOKEN\\"}" > /logs/verifier/reward-details.json; '
            'if [ "$TOKEN" = "' + SECRET + '" ] && [ "$MODE" = dflt ]; then echo 1; else echo 0; fi '
            '> /logs/verifier/reward.txt')
ORACLE = WRITE_HELLO + '; mkdir -p /logs/agent; echo "sandbox sees $SANDBOX_TOKEN" > /logs/agent/seen.txt'


def reader_task(root: Path, name: str = "reader") -> Path:
    task = make_task(root, name, solve=ORACLE, test=VERIFIER)
    text = (task / "task.md").read_text()
    text = text.replace("verifier: {timeout_sec: 30}",
                        "verifier: {timeout_sec: 30, env: {TOKEN: '${HOST_VAR}', MODE: '${UNNAMED:-dflt}'}}")
    text = text.replace("sandbox: {network_mode: no-network}",
                        "sandbox: {network_mode: no-network, env: {SANDBOX_TOKEN: '${HOST_VAR}'}}")
    (task / "task.md").write_text(text)
    return task


def holding(root: Path, needle: str) -> list[str]:
    """Every path under ``root`` whose name, link target or content holds ``needle`` (no link followed)."""
    raw = needle.encode()
    found = []
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = os.lstat(path)
            if needle in name:
                found.append(str(path))
            elif stat.S_ISLNK(info.st_mode):
                if needle in os.readlink(path):
                    found.append(str(path))
            elif stat.S_ISREG(info.st_mode) and raw in path.read_bytes():
                found.append(str(path))
    return found


HOST_ENV = {"HOST_VAR": SECRET, "UNNAMED": "the-host-value-of-unnamed"}


def test_an_unnamed_host_variable_is_refused_before_anything_starts(tmp_path: Path) -> None:
    reader_task(tmp_path / "tasks")
    jobs = tmp_path / "jobs"
    refused = run_bench("run", str(tmp_path / "tasks"), "--jobs-dir", str(jobs), env=HOST_ENV)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "reader:" in lines[0] and "${HOST_VAR}" in lines[0] and "--allow-task-env HOST_VAR" in lines[0]
    assert not jobs.exists()
    check = run_bench("check", str(tmp_path / "tasks" / "reader"), env=HOST_ENV)
    assert check.returncode == 1 and "--allow-task-env HOST_VAR" in check.stdout
    allowed = run_bench("check", str(tmp_path / "tasks" / "reader"), "--allow-task-env", "HOST_VAR", env=HOST_ENV)
    assert allowed.returncode == 0, allowed.stdout


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_allowed_variable_reaches_the_task_and_never_the_job_folder(tmp_path: Path, backend: str) -> None:
    reader_task(tmp_path / "tasks")
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", backend, "--jobs-dir", str(jobs),
                     "--allow-task-env", "HOST_VAR", "--freeze-workspace", env=HOST_ENV)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    trial = next(p for p in jobs.rglob("reader__*") if p.is_dir())
    assert json.loads((trial / "result.json").read_text())["rewards"] == {"reward": 1.0}
    masked = "*" * len(SECRET)
    assert (trial / "verifier" / "test-stdout.txt").read_text().strip() == f"token={masked} mode=dflt"
    assert (trial / "agent" / "seen.txt").read_text().strip() == f"sandbox sees {masked}"
    assert holding(jobs, SECRET) == []
    evaluation = json.loads(next(jobs.rglob("evaluation.json")).read_text())
    assert evaluation["run_config"]["allow_task_env"] == ["HOST_VAR"]

    job = trial.parent
    regraded = run_bench("regrade", str(job), "--allow-task-env", "HOST_VAR", env=HOST_ENV)
    assert regraded.returncode == 0, regraded.stdout + regraded.stderr
    assert json.loads((trial / "regrade.json").read_text())["rewards"] == {"reward": 1.0}
    assert holding(jobs, SECRET) == []
    refused = run_bench("regrade", str(job), env=HOST_ENV)
    assert refused.returncode == 2 and "--allow-task-env HOST_VAR" in refused.stderr


@pytest.mark.parametrize("how", ["declared", "link"])
def test_a_verifier_outside_the_task_is_refused_by_check_and_run(tmp_path: Path, how: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test.sh").write_text("#!/bin/sh\ncat /etc/hostname > /logs/verifier/reward.txt\n")
    task = make_task(tmp_path / "tasks", "escape", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    if how == "declared":
        text = (task / "task.md").read_text().replace("---\n", "---\nbenchflow: {verifier: {path: ../../outside}}\n", 1)
        (task / "task.md").write_text(text)
        key = "task.md: benchflow.verifier.path"
    else:
        for child in (task / "verifier").iterdir():
            child.unlink()
        (task / "verifier").rmdir()
        (task / "verifier").symlink_to(outside)
        key = "verifier/:"
    check = run_bench("check", str(task))
    assert check.returncode == 1 and key in check.stdout and "Traceback" not in check.stdout + check.stderr
    jobs = tmp_path / "jobs"
    run = run_bench("run", str(task), "--jobs-dir", str(jobs))
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and "inside the task" in lines[0]
    assert not jobs.exists()


@pytest.mark.docker
def test_regrade_holds_the_job_lock_so_a_run_of_the_job_is_refused(tmp_path: Path) -> None:
    task = make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    args = ["run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--job-name", "j"]
    assert run_bench(*args, "--freeze-workspace").returncode == 0
    job = jobs / "j"
    (task / "verifier" / "test.sh").write_text("#!/bin/sh\nsleep 60\n")
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "regrade", str(job)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the lock file names its holder; reading it takes no lock, so the wait cannot race the regrade
        wait_until(lambda: JobPaths(job).lock.read_text().strip() == str(proc.pid),
                   what="the regrade to take the job's lock")
        refused = run_bench(*args, "--restart-changed")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "still running" in refused.stderr
        assert proc.poll() is None  # the regrade was still running when the run was refused
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    assert not job_is_running(JobPaths(job))  # released when the regrade ends
