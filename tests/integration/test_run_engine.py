"""The run engine end to end: real sandboxes, real verifiers, the job folder as a user reads it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_bench  # noqa: E402
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task
from tests.waiting import runs_in_container, wait_until

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker),
            pytest.param("local", marks=pytest.mark.local_sandbox)]


def results(jobs: Path) -> dict[str, dict]:
    """Task name -> result.json of every finished trial under ``jobs``."""
    out = {}
    for path in jobs.rglob("result.json"):
        data = json.loads(path.read_text())
        out[data["task_name"]] = data
    return out


def job_dir(jobs: Path) -> Path:
    return next(p for p in jobs.iterdir() if p.is_dir())


def containers_of(job: Path) -> list[str]:
    import docker

    client = docker.from_env()
    found = client.containers.list(all=True, sparse=True, filters={"label": f"benchflow.job={job.resolve()}"})
    return [c.id for c in found]


@pytest.mark.parametrize("backend", BACKENDS)
def test_oracle_scores_one_and_nop_scores_zero(tmp_path: Path, backend: str) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", backend, "--jobs-dir", str(jobs))
    assert done.returncode == 0, done.stderr
    assert "Outcomes: 1 scored (1 passed, 0 failed), 0 unscored, 0 errored" in done.stdout
    trial = next(job_dir(jobs).glob("hello__*"))
    for name in ("config.json", "result.json", "timing.json", "prompts.json", "sandbox.json",
                 "agent/oracle.txt", "verifier/reward.txt", "trajectory/acp_trajectory.jsonl"):
        assert (trial / name).is_file(), name
    result = json.loads((trial / "result.json").read_text())
    assert result["rewards"] == {"reward": 1.0} and result["environment"] == backend
    assert json.loads((trial / "config.json").read_text())["environment"] == backend
    assert json.loads((trial / "prompts.json").read_text()) == ["Do the task."]

    nop = run_bench("run", str(tmp_path / "tasks"), "-s", backend, "-a", "nop", "--jobs-dir", str(jobs))
    assert nop.returncode == 0, nop.stderr
    assert "(0 passed, 1 failed)" in nop.stdout
    assert "new (the latest job" in nop.stderr  # a different agent never resumes the oracle's job


def outcome_tasks(root: Path) -> None:
    make_task(root, "pass", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    make_task(root, "fail", solve="true", test=PASS_IF_HELLO)
    make_task(root, "partial", test="""printf '{"metrics": {"a": 1, "b": 0}, "aggregate": {"method": "mean"}}' > /logs/verifier/reward.json""")
    make_task(root, "no-reward", test="echo 'tests ran, nothing written'")
    make_task(root, "garbage", test="echo banana > /logs/verifier/reward.txt")
    make_task(root, "verifier-hang", test="sleep 30", verifier_timeout=1)
    make_task(root, "agent-timeout", solve="sleep 30; " + WRITE_HELLO, test=PASS_IF_HELLO, agent_timeout=1)
    make_task(root, "loud", test="head -c 8000000 /dev/zero | tr '\\0' x; echo 1 > /logs/verifier/reward.txt")
    make_task(root, "hidden-tests",
              solve="ls /verifier /tests /solution > /app/seen.txt 2>&1; [ -e /verifier ] || [ -e /tests ] && exit 0; echo clean > /app/verdict",
              test='[ "$(cat /app/verdict 2>/dev/null)" = clean ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')
    make_task(root, "ünïcode-tâsk", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    make_task(root, "broken-image", dockerfile="FROM debian:bookworm-slim\nRUN exit 3\n", test=PASS_IF_HELLO)


@pytest.mark.docker
def test_every_outcome_is_recorded_with_its_category(tmp_path: Path) -> None:
    outcome_tasks(tmp_path / "tasks")
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "-j", "4", "--jobs-dir", str(jobs),
                     "--summary-out", str(tmp_path / "run-summary.json"))
    assert done.returncode == 1, done.stderr  # errored trials make the run exit 1
    r = results(jobs)
    assert r["pass"]["rewards"]["reward"] == 1.0
    assert r["fail"]["rewards"]["reward"] == 0.0
    assert r["partial"]["rewards"]["reward"] == 0.5 and r["partial"]["rewards"]["metrics"] == {"a": 1, "b": 0}
    assert r["no-reward"]["rewards"] is None and r["no-reward"]["verifier_error_category"] == "verifier_failure"
    assert "No reward file" in r["no-reward"]["verifier_error"]
    assert r["garbage"]["verifier_error_category"] == "verifier_failure"
    assert "banana" in r["garbage"]["verifier_error"]
    assert r["verifier-hang"]["verifier_error_category"] == "verifier_timeout"
    assert r["verifier-hang"]["verifier_timeout_info"]["timeout_budget_sec"] == 1.0
    assert "ran it once more" in " ".join(r["verifier-hang"]["verifier_warnings"])  # wedged: retried once
    assert r["agent-timeout"]["error_category"] == "timeout"
    assert r["agent-timeout"]["rewards"] == {"reward": 0.0}  # still verified: a scored failure
    assert r["agent-timeout"]["agent_timeout_info"]["timeout_sec"] == 1.0
    assert r["loud"]["rewards"]["reward"] == 1.0
    loud_trial = next(job_dir(jobs).glob("loud__*"))
    assert (loud_trial / "verifier" / "test-stdout.txt").stat().st_size >= 8_000_000
    assert r["hidden-tests"]["rewards"]["reward"] == 1.0, "the agent saw the verifier or solution files"
    assert r["ünïcode-tâsk"]["rewards"]["reward"] == 1.0
    assert r["broken-image"]["error_category"] == "sandbox_setup"
    assert r["broken-image"]["sandbox_startup_info"]["reason"] == "build_failed"
    assert "exit" in r["broken-image"]["error"].lower() or "returned a non-zero code" in r["broken-image"]["error"]
    assert len(list(job_dir(jobs).glob("broken-image__*"))) == 1  # a build failure is not retried
    assert "[attempted once: the same Dockerfile fails the same way]" in r["broken-image"]["error"]
    summary = json.loads((job_dir(jobs) / "summary.json").read_text())
    assert summary["total"] == 11 and summary["passed"] == 4
    assert summary["verifier_errored"] == 3 and summary["errored"] == 1
    run_summary = json.loads((tmp_path / "run-summary.json").read_text())
    assert run_summary["kind"] == "benchflow.run-summary" and run_summary["exit_code"] == 1
    # a finished trial's container is removed by the engine, which may finish after the run exits
    wait_until(lambda: containers_of(job_dir(jobs)) == [], what="the engine to remove every sandbox")


@pytest.mark.docker
def test_kill_9_loses_no_finished_trial_and_reruns_none(tmp_path: Path) -> None:
    for name in ("a", "b", "c", "d"):
        make_task(tmp_path / "tasks", name, solve="sleep 2; " + WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    cmd = [sys.executable, "-m", "benchflow.cli", "run", str(tmp_path / "tasks"), "-s", "docker", "-j", "1",
           "--jobs-dir", str(jobs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def running_trial() -> bool:
        """One trial finished and another has its sandbox up (sandbox.json, no result.json yet)."""
        started = [p.parent for p in jobs.rglob("sandbox.json")]
        return bool(list(jobs.rglob("result.json"))) and any(not (t / "result.json").exists() for t in started)

    wait_until(running_trial, timeout=120, what="one finished trial and one running")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert containers_of(job_dir(jobs)), "the killed run left no sandbox: the test did not kill mid-trial"
    before = {p.parent.name: p.stat().st_mtime for p in jobs.rglob("result.json")}
    assert before, "no trial finished before the kill"
    job = job_dir(jobs)
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "-j", "2", "--jobs-dir", str(jobs))
    assert done.returncode == 0, done.stderr
    after = {p.parent.name: p.stat().st_mtime for p in jobs.rglob("result.json")}
    for trial, mtime in before.items():
        assert after[trial] == mtime  # finished trials are kept as they were
    tasks_done = [json.loads(p.read_text())["task_name"] for p in jobs.rglob("result.json")]
    assert sorted(tasks_done) == ["a", "b", "c", "d"]  # each task finished exactly once
    # the killed run's sandbox was cleaned up by the rerun (and the rerun's own go as it ends)
    wait_until(lambda: containers_of(job) == [], what="the engine to remove every sandbox")


@pytest.mark.docker
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_cancels_running_trials_and_removes_their_sandboxes(tmp_path: Path, sig: int) -> None:
    make_task(tmp_path / "tasks", "slow", solve="sleep 60", test=PASS_IF_HELLO, agent_timeout=120)
    jobs = tmp_path / "jobs"
    cmd = [sys.executable, "-m", "benchflow.cli", "run", str(tmp_path / "tasks"), "-s", "docker",
           "--jobs-dir", str(jobs)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: list(jobs.rglob("sandbox.json")), what="the trial's sandbox")
    wait_until(lambda: runs_in_container(containers_of(job_dir(jobs)), "sleep 60"), what="the oracle to run")
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "resume" in err
    assert containers_of(job_dir(jobs)) == []
    assert not list(jobs.rglob("result.json"))  # unfinished: a rerun runs it again


@pytest.mark.docker
def test_changed_task_refuses_resume_unless_restart_changed(tmp_path: Path) -> None:
    task = make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    args = ["run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--job-name", "j"]
    assert run_bench(*args).returncode == 0
    (task / "verifier" / "test.sh").write_text((task / "verifier" / "test.sh").read_text() + "\n# edited\n")
    refused = run_bench(*args)
    assert refused.returncode == 2
    assert "--restart-changed" in refused.stderr and "task_digest" in refused.stderr
    again = run_bench(*args, "--restart-changed")
    assert again.returncode == 0, again.stderr
    assert len(list((jobs / "j" / ".set-aside").iterdir())) == 1


@pytest.mark.docker
def test_secret_agent_env_never_reaches_disk(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    secret = "sk-proj-" + "Z" * 40
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                     "--agent-env", f"OPENAI_API_KEY={secret}", "--agent-env", "PLAIN_SETTING=visible",
                     "--run-config-out", str(jobs / "run-config.json"))
    assert done.returncode == 0, done.stderr
    blob = "".join(p.read_text(errors="replace") for p in jobs.rglob("*") if p.is_file())
    assert secret not in blob
    config = json.loads(next(jobs.rglob("config.json")).read_text())
    assert config["agent_env"] == {"PLAIN_SETTING": "visible"}


@pytest.mark.docker
def test_freeze_workspace_and_keep_sandbox(tmp_path: Path) -> None:
    import docker

    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs),
                     "--freeze-workspace", "--keep-sandbox", "always")
    assert done.returncode == 0, done.stderr
    trial = next(job_dir(jobs).glob("hello__*"))
    assert (trial / "evidence" / "workspace" / "hello.txt").read_text() == "hello\n"
    manifest = json.loads((trial / "evidence" / "manifest.json").read_text())
    assert [f["path"] for f in manifest["files"]] == ["hello.txt"]
    kept = json.loads((trial / "kept-sandbox.json").read_text())
    container = docker.from_env().containers.get(kept["sandbox_id"])
    assert container.status == "running"
    container.remove(force=True)


@pytest.mark.docker
def test_gates_dry_run_trials_and_matrix(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "pass", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    make_task(tmp_path / "tasks", "fail", solve="true", test=PASS_IF_HELLO)
    tasks = str(tmp_path / "tasks")
    plan = run_bench("run", tasks, "-s", "docker", "--dry-run", "-i", "pa*")
    assert plan.returncode == 0
    assert [t["name"] for t in json.loads(plan.stdout)["tasks"]] == ["pass"]
    assert "Run card: accept" in plan.stderr
    refused = run_bench("run", tasks, "-s", "docker", "--dry-run", "--expected-tasks", "5")
    assert refused.returncode == 1 and "REFUSE" in refused.stderr

    gated = run_bench("run", tasks, "-s", "docker", "--jobs-dir", str(tmp_path / "g"), "--fail-under", "0.9")
    assert gated.returncode == 1 and "below --fail-under" in gated.stderr
    ok = run_bench("run", tasks, "-s", "docker", "--jobs-dir", str(tmp_path / "g2"), "--fail-under", "0.5")
    assert ok.returncode == 0, ok.stderr

    repeats = run_bench("run", tasks, "-s", "docker", "--jobs-dir", str(tmp_path / "t"), "--trials", "2")
    assert repeats.returncode == 0, repeats.stderr
    for n in ("01", "02"):
        assert len(list((tmp_path / "t" / "oracle" / f"trial-{n}").rglob("result.json"))) == 2

    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("models:\n  ref: {agent: oracle}\n  control: {agent: nop}\n")
    mx = run_bench("run", tasks, "-s", "docker", "--jobs-dir", str(tmp_path / "m"), "--matrix", str(matrix))
    assert mx.returncode == 0, mx.stderr
    summary = json.loads((tmp_path / "m" / "matrix-summary.json").read_text())
    by_alias = {r["alias"]: r for r in summary["runs"]}
    assert by_alias["ref"]["passed"] == 1 and by_alias["control"]["passed"] == 0


@pytest.mark.docker
def test_python_api_is_the_same_code(tmp_path: Path) -> None:
    import benchflow as bf

    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    outcome = bf.run(str(tmp_path / "tasks"), sandbox="docker", jobs_dir=str(tmp_path / "jobs"))
    assert outcome.exit_code == 0 and outcome.summary["passed"] == 1


@pytest.mark.docker
def test_python_api_runs_every_repeat_like_the_cli(tmp_path: Path) -> None:
    import benchflow as bf

    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    outcome = bf.run(str(tmp_path / "tasks"), sandbox="docker", jobs_dir=str(tmp_path / "jobs"), trials=3)
    assert outcome.exit_code == 0 and len(outcome.outcomes) == 3
    results = sorted((tmp_path / "jobs" / "oracle").glob("trial-*/*/hello__*/result.json"))
    assert [r.parents[2].name for r in results] == ["trial-01", "trial-02", "trial-03"]
    assert all(json.loads(r.read_text())["rewards"]["reward"] == 1.0 for r in results)


@pytest.mark.docker
def test_eval_run_and_eval_resume_finish_only_the_unfinished(tmp_path: Path) -> None:
    import fcntl
    import shutil

    for name in ("a", "b"):
        make_task(tmp_path / "tasks", name, solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    done = run_bench("eval", "run", "--tasks-dir", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs))
    assert done.returncode == 0, done.stderr
    job = job_dir(jobs)
    keep = next(job.glob("a__*"))
    shutil.rmtree(next(job.glob("b__*")))  # as if the run died before b finished
    kept_mtime = (keep / "result.json").stat().st_mtime

    with open(job / ".lock", "a+") as handle:  # a live run holds the job
        fcntl.flock(handle, fcntl.LOCK_EX)
        busy = run_bench("eval", "resume", str(job))
        assert busy.returncode == 2 and "still running" in busy.stderr

    resumed = run_bench("eval", "resume", str(job))
    assert resumed.returncode == 0, resumed.stderr
    assert "1 to run, 1 reused" in resumed.stderr
    assert (keep / "result.json").stat().st_mtime == kept_mtime
    assert sorted(results(jobs)) == ["a", "b"]


@pytest.mark.docker
def test_seeds_run_every_task_once_per_seed_and_resume_per_seed(tmp_path: Path) -> None:
    # The verifier passes only odd seeds: BENCHFLOW_SEED reaches it.
    make_task(tmp_path / "tasks", "seeded", test='[ $((BENCHFLOW_SEED % 2)) = 1 ] && r=1 || r=0; echo $r > /logs/verifier/reward.txt')
    jobs = tmp_path / "jobs"
    args = ["run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--seeds", "0-3", "-j", "4"]
    done = run_bench(*args)
    assert done.returncode == 0, done.stderr
    summary = json.loads((job_dir(jobs) / "summary.json").read_text())
    assert summary["total"] == 4 and summary["passed"] == 2
    stats = summary["seeds"]["seeded"]
    assert stats["n"] == 4 and stats["mean_reward"] == 0.5 and stats["variance"] == 0.25
    assert stats["pass_at_k"]["1"] == 0.5 and stats["pass_at_k"]["4"] == 1.0
    seeds = sorted(json.loads(p.read_text())["seed"] for p in jobs.rglob("result.json"))
    assert seeds == [0, 1, 2, 3]
    again = run_bench(*args)
    assert "0 to run, 4 reused" in again.stderr
    bad = run_bench(*args[:-2], "--seeds", "3-1")
    assert bad.returncode == 2 and "--seeds" in bad.stderr


@pytest.mark.docker
def test_the_frozen_workspace_is_what_the_verifier_saw(tmp_path: Path) -> None:
    # The agent (as the sandbox user) leaves a process appending to the workspace forever.
    from tests.integration.test_agent_pipeline import PYTHON_IMAGE, fake_agent_file

    writer = "sh -c 'while :; do echo tick >> ticks.txt; done' >/dev/null 2>&1 & sleep 1"
    steps = [{"op": "tool", "id": "w", "run": writer}]
    agent = fake_agent_file(tmp_path, env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [steps]})})
    count = "wc -l < ticks.txt > /logs/verifier/seen.txt; echo 1 > /logs/verifier/reward.txt"
    make_task(tmp_path / "tasks", "late", dockerfile=PYTHON_IMAGE, test=count)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tmp_path / "tasks"), "-s", "docker", "--jobs-dir", str(jobs), "--freeze-workspace",
                     "-a", str(agent))
    assert done.returncode == 0, done.stderr
    trial = next(job_dir(jobs).glob("late__*"))
    frozen = (trial / "evidence" / "workspace" / "ticks.txt").read_text().count("\n")
    seen = int((trial / "verifier" / "seen.txt").read_text())
    assert frozen > 0 and frozen == seen  # the writer was stopped before the freeze, not after
