"""bench run -d against a registry of local git repositories: fetch, verify, run, then run again from the cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchflow.tasks.digest import task_digest
from tests.conftest import run_bench
from tests.registry_repos import commit_all, entry, task_repo, write_registry

pytestmark = pytest.mark.docker


def _trials(job: Path) -> dict[str, Path]:
    return {json.loads((p / "config.json").read_text())["task_name"]: p for p in job.iterdir() if (p / "config.json").is_file()}


def test_a_dataset_runs_verified_then_again_offline_and_resumes_from_the_cache(tmp_path):
    alpha, sha = task_repo(tmp_path / "repos", "alpha", ["a1", "a2"])
    beta, sha_b = task_repo(tmp_path / "repos", "beta", ["b1"], folder="bench")
    registry = write_registry(tmp_path / "registry.json", [entry(alpha, sha, "alpha", "1.0", ["a1", "a2"]),
                                                            entry(beta, sha_b, "beta", "2", ["b1"], folder="bench")])
    pinned = {t["name"]: t["digest"] for t in json.loads(registry.read_text())[0]["tasks"]}
    env = {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    jobs, manifest = tmp_path / "jobs", tmp_path / "manifest.json"
    args = ["run", "-d", "alpha@1.0", "--registry", str(registry), "-s", "docker", "--jobs-dir", str(jobs)]

    done = run_bench(*args, "--task-manifest-out", str(manifest), env=env)
    assert done.returncode == 0, done.stderr
    assert "(2 passed, 0 failed)" in done.stdout
    job = next(p for p in jobs.iterdir() if p.is_dir())
    trials = _trials(job)
    assert set(trials) == {"a1", "a2"}
    for name, trial in trials.items():
        config = json.loads((trial / "config.json").read_text())
        assert (config["dataset_name"], config["dataset_version"]) == ("alpha", "1.0")
        assert config["task_digest"] == pinned[name] and config["source"]["commit"] == sha
    summary = json.loads((job / "summary.json").read_text())
    assert (summary["dataset_name"], summary["dataset_version"], summary["source"]["path"]) == ("alpha", "1.0", "tasks")
    rows = json.loads(manifest.read_text())
    assert rows["dataset_name"] == "alpha" and all(t["registry_digest_match"] for t in rows["tasks"])

    shutil.rmtree(alpha)  # nothing to fetch from any more: the cache must serve both runs below
    again = run_bench(*args, "--fresh", env=env)
    assert again.returncode == 0, again.stderr
    assert "(2 passed, 0 failed)" in again.stdout

    (trials["a2"] / "result.json").unlink()
    resumed = run_bench("eval", "resume", str(job), env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert "1 to run, 1 reused" in resumed.stdout + resumed.stderr and "(2 passed, 0 failed)" in resumed.stdout


def test_a_tampered_task_refuses_the_run_by_name_before_any_sandbox(tmp_path):
    repo, _ = task_repo(tmp_path / "repos", "gamma", ["fine", "changed"])
    digests = {"changed": task_digest(repo / "tasks" / "changed")}
    (repo / "tasks" / "changed" / "verifier" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
    sha = commit_all(repo)
    registry = write_registry(tmp_path / "registry.json",
                              [entry(repo, sha, "gamma", "1", ["fine", "changed"], digests=digests)])
    jobs = tmp_path / "jobs"
    done = run_bench("run", "-d", "gamma@1", "--registry", str(registry), "-s", "docker", "--jobs-dir", str(jobs),
                     env={"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 1
    assert "task changed: content digest" in done.stderr and done.stderr.strip().count("\n") == 0
    assert not jobs.exists()  # refused at planning: no job folder, no trial, no sandbox
