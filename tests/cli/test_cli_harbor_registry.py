"""bench run -d and bench hub list|show against a Harbor-format registry.json, as a user types them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from benchflow.tasks.digest import task_digest
from tests.conftest import run_bench
from tests.registry_repos import harbor_entry, task_repo, write_registry


@pytest.fixture
def harbor(tmp_path) -> dict:
    repo, sha = task_repo(tmp_path / "repos", "tb2", ["hello", "world"])
    registry = write_registry(tmp_path / "registry.json", [
        harbor_entry(repo, sha, "terminal-bench", "2.0", ["hello", "world"]),
        harbor_entry(repo, None, "terminal-bench", "head", ["hello"]),
    ])
    return {"repo": repo, "sha": sha, "registry": registry, "env": {"BENCHFLOW_CACHE": str(tmp_path / "cache")}}


def _dry_run(harbor: dict, spec: str, env: dict[str, str] | None = None):
    done = run_bench("run", "-d", spec, "--registry", str(harbor["registry"]), "--dry-run", "--sandbox", "docker",
                     env={**harbor["env"], **(env or {})})
    assert done.stdout, done.stderr
    return json.loads(done.stdout), done.stderr


def test_a_dry_run_fetches_records_the_digest_then_plans_again_from_the_cache(harbor, tmp_path):
    plan, _ = _dry_run(harbor, "terminal-bench@2.0")
    want = {t: task_digest(harbor["repo"] / "tasks" / t) for t in ("hello", "world")}
    assert {t["name"]: t["digest"] for t in plan["tasks"]} == want
    assert (plan["dataset_name"], plan["dataset_version"]) == ("terminal-bench", "2.0")
    assert plan["source"]["commit"] == harbor["sha"] and plan["source"]["repos"][0]["pinned"] is True
    shutil.rmtree(harbor["repo"])
    no_git = {"PATH": os.path.dirname(os.sys.executable)}  # docker is not needed to plan a dry run
    again, _ = _dry_run(harbor, "terminal-bench@2.0", env=no_git)
    assert {t["name"]: t["digest"] for t in again["tasks"]} == want


def test_a_task_at_head_is_on_the_run_card_with_the_commit_fetched(harbor):
    plan, stderr = _dry_run(harbor, "terminal-bench@head")
    warning = (f"not pinned: the repository's HEAD when fetched; the commit fetched ({harbor['sha']}) is recorded")
    assert any(warning in line for line in plan["run_card"]["warnings"])
    assert warning in stderr and plan["source"]["repos"][0]["commit"] == harbor["sha"]


def test_hub_list_and_show_read_a_harbor_registry(harbor):
    listed = run_bench("hub", "list", "--registry", str(harbor["registry"]), env=harbor["env"])
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[:3] for line in listed.stdout.splitlines()] == [
        ["terminal-bench@2.0", "2", "tasks"], ["terminal-bench@head", "1", "task"]]
    shown = run_bench("hub", "show", "terminal-bench@2.0", "--registry", str(harbor["registry"]), env=harbor["env"])
    assert shown.returncode == 0, shown.stderr
    rows = dict(line.split(None, 1) for line in shown.stdout.splitlines()[1:])
    assert rows == {"hello": f"no digest (commit {harbor['sha']})", "world": f"no digest (commit {harbor['sha']})"}
    head = run_bench("hub", "show", "terminal-bench@head", "--registry", str(harbor["registry"]), env=harbor["env"])
    assert head.stdout.splitlines()[1].split(None, 1) == ["hello", "not pinned (HEAD)"]


def test_hub_check_computes_a_harbor_tasks_digest(harbor, tmp_path):
    out = tmp_path / "rows.jsonl"
    done = run_bench("hub", "check", "--registry", str(harbor["registry"]), "--level", "check", "--out", str(out),
                     "--cache-dir", str(tmp_path / "hc"), env=harbor["env"])
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {(r["version"], r["task"]): r for r in map(json.loads, out.read_text().splitlines())}
    assert rows[("2.0", "hello")]["digest"] == task_digest(harbor["repo"] / "tasks" / "hello")
    assert rows[("head", "hello")]["git_commit_id"] == harbor["sha"]
