"""bench run -d against a Harbor-format registry.json on docker: fetched, digest computed and recorded, run again
from the cache with the repository gone; an unpinned (HEAD) task's run card says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchflow.tasks.digest import task_digest
from tests.conftest import run_bench
from tests.registry_repos import harbor_entry, task_repo, write_registry

pytestmark = pytest.mark.docker


def _configs(job: Path) -> dict[str, dict]:
    return {c["task_name"]: c for c in (json.loads((p / "config.json").read_text()) for p in job.iterdir()
                                        if (p / "config.json").is_file())}


def test_a_harbor_dataset_runs_with_computed_digests_then_again_from_the_cache(tmp_path):
    repo, sha = task_repo(tmp_path / "repos", "tb2", ["hello"])
    registry = write_registry(tmp_path / "registry.json", [harbor_entry(repo, sha, "tb", "2.0", ["hello"]),
                                                           harbor_entry(repo, None, "tb", "head", ["hello"])])
    digest = task_digest(repo / "tasks" / "hello")
    env = {"BENCHFLOW_CACHE": str(tmp_path / "cache")}
    jobs = tmp_path / "jobs"
    args = ["run", "-d", "tb@2.0", "--registry", str(registry), "-s", "docker", "--jobs-dir", str(jobs)]

    done = run_bench(*args, env=env)
    assert done.returncode == 0, done.stderr
    assert "(1 passed, 0 failed)" in done.stdout
    job = next(p for p in jobs.iterdir() if p.is_dir())
    config = _configs(job)["hello"]
    assert config["task_digest"] == digest and config["source"]["commit"] == sha
    assert config["source"]["repos"][0]["pinned"] is True

    shutil.rmtree(repo)  # nothing to fetch from any more: the cache serves the run
    again = run_bench(*args, "--fresh", env=env)
    assert again.returncode == 0, again.stderr
    assert "(1 passed, 0 failed)" in again.stdout


def test_an_unpinned_harbor_task_runs_with_a_warning_on_its_run_card(tmp_path):
    repo, sha = task_repo(tmp_path / "repos", "tb2", ["hello"])
    registry = write_registry(tmp_path / "registry.json", [harbor_entry(repo, None, "tb", "head", ["hello"])])
    jobs = tmp_path / "jobs"
    done = run_bench("run", "-d", "tb@head", "--registry", str(registry), "-s", "docker", "--jobs-dir", str(jobs),
                     env={"BENCHFLOW_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    job = next(p for p in jobs.iterdir() if p.is_dir())
    card = json.loads((job / "run-card.json").read_text())
    assert any("not pinned: the repository's HEAD when fetched" in w and sha in w for w in card["warnings"])
    assert _configs(job)["hello"]["source"]["repos"][0] == {"repo": repo.resolve().as_uri(), "requested": "HEAD",
                                                            "commit": sha, "pinned": False, "tasks": 1}
