"""Harbor's registry.json (tasks pinned by git commit, or not at all, with no digest) resolved like ours."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchflow.datasets import resolve_dataset
from benchflow.datasets.registry import parse_dataset_ref
from benchflow.datasets.registry_load import open_dataset
from benchflow.errors import DatasetError
from benchflow.tasks.digest import task_digest
from tests.registry_repos import commit_all, entry, harbor_entry, task_repo, write_registry
from tests.doubles.static_site import StaticSite


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BENCHFLOW_CACHE", str(root))
    return root


def test_a_task_pinned_by_commit_gets_the_digest_of_what_was_fetched(cache, tmp_path):
    repo, sha = task_repo(tmp_path / "repos", "tb", ["hello", "world"])
    registry = write_registry(tmp_path / "registry.json", [harbor_entry(repo, sha, "terminal-bench", "2.0",
                                                                        ["hello", "world"])])
    got = resolve_dataset("terminal-bench@2.0", registry=str(registry))
    assert [p.name for p in got.dirs] == ["hello", "world"]
    assert all(p.is_relative_to(cache) and not (p / ".git").exists() for p in got.dirs)
    assert got.registry_digests == {t: task_digest(repo / "tasks" / t) for t in ("hello", "world")}
    assert [p.parent.name for p in got.dirs] == [d[7:] for d in got.registry_digests.values()]  # keyed by it
    assert (got.source["repo"], got.source["commit"], got.source["path"]) == (repo.resolve().as_uri(), sha, "tasks")
    assert got.source["repos"] == [{"repo": repo.resolve().as_uri(), "requested": sha, "commit": sha,
                                    "pinned": True, "tasks": 2}]
    assert got.warnings == []


def test_a_second_resolve_of_a_pinned_harbor_task_needs_no_git(cache, tmp_path, monkeypatch):
    repo, sha = task_repo(tmp_path / "repos", "tb", ["hello"])
    registry = write_registry(tmp_path / "registry.json", [harbor_entry(repo, sha, "tb", "1", ["hello"])])
    first = resolve_dataset("tb@1", registry=str(registry))
    shutil.rmtree(repo)
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    again = resolve_dataset("tb@1", registry=str(registry))
    assert again.dirs == first.dirs and again.registry_digests == first.registry_digests


def test_a_task_at_head_is_fetched_each_run_warned_and_its_commit_recorded(cache, tmp_path):
    repo, first_sha = task_repo(tmp_path / "repos", "tb", ["hello"])
    registry = write_registry(tmp_path / "registry.json", [harbor_entry(repo, None, "tb", "head", ["hello"])])
    got = resolve_dataset("tb@head", registry=str(registry))
    assert got.source["commit"] == first_sha and got.source["repos"][0]["pinned"] is False
    assert got.warnings == [f"tb@head: 1 task of {repo.resolve().as_uri()} not pinned: the repository's HEAD when "
                            f"fetched; the commit fetched ({first_sha}) is recorded"]
    (repo / "tasks" / "hello" / "notes.txt").write_text("moved on\n")
    second_sha = commit_all(repo)
    again = resolve_dataset("tb@head", registry=str(registry))
    assert again.source["commit"] == second_sha
    assert again.registry_digests["hello"] == task_digest(repo / "tasks" / "hello") != got.registry_digests["hello"]


def test_tasks_at_several_commits_of_a_harbor_entry_are_each_fetched_at_theirs(cache, tmp_path):
    repo, old = task_repo(tmp_path / "repos", "tb", ["a", "b"])
    (repo / "tasks" / "b" / "notes.txt").write_text("later\n")
    new = commit_all(repo)
    rows = harbor_entry(repo, old, "tb", "1", ["a", "b"])
    rows["tasks"][1]["git_commit_id"] = new
    got = resolve_dataset("tb@1", registry=str(write_registry(tmp_path / "r.json", [rows])))
    assert [(g["commit"], g["tasks"]) for g in got.source["repos"]] == [(old, 1), (new, 1)]
    assert (got.dirs[1] / "notes.txt").is_file() and not (got.dirs[0] / "notes.txt").exists()


def test_a_harbor_commit_that_is_not_in_the_repository_is_refused(cache, tmp_path):
    repo, _ = task_repo(tmp_path / "repos", "tb", ["hello"])
    registry = write_registry(tmp_path / "r.json", [harbor_entry(repo, "1" * 40, "tb", "1", ["hello"])])
    with pytest.raises(DatasetError, match="git"):
        resolve_dataset("tb@1", registry=str(registry))


def test_our_digest_rule_is_unchanged_beside_harbor_entries(cache, tmp_path):
    repo, sha = task_repo(tmp_path / "repos", "mixed", ["ours", "theirs"])
    ours = entry(repo, sha, "mixed", "1", ["ours"], digests={"ours": "sha256:" + "0" * 64})
    ours["tasks"] += harbor_entry(repo, sha, "mixed", "1", ["theirs"])["tasks"]
    registry = write_registry(tmp_path / "r.json", [ours])
    with pytest.raises(DatasetError, match=r"task ours: content digest sha256:\w+ does not match the registry's"):
        resolve_dataset("mixed@1", registry=str(registry))


def test_a_harbor_local_path_task_is_listed_but_refused_by_name(cache, tmp_path):
    registry = write_registry(tmp_path / "r.json", [{"name": "loc", "version": "1", "description": "",
                                                     "tasks": [{"name": "here", "path": "/srv/tasks/here"}]}])
    with pytest.raises(DatasetError, match=r"task here: a Harbor local-path task .*bench run PATH"):
        resolve_dataset("loc@1", registry=str(registry))


@pytest.fixture
def registries(tmp_path, monkeypatch, cache):
    """BenchFlow's registry (alpha@1.0) and Harbor's (terminal-bench@2.0, alpha@2.0) on loopback."""
    repo, sha = task_repo(tmp_path / "repos", "r", ["t"])
    site = tmp_path / "site"
    site.mkdir()
    (site / "ours.json").write_text(json.dumps([entry(repo, sha, "alpha", "1.0", ["t"])]))
    (site / "harbor.json").write_text(json.dumps([harbor_entry(repo, sha, "terminal-bench", "2.0", ["t"]),
                                                  harbor_entry(repo, sha, "alpha", "2.0", ["t"])]))
    server = StaticSite(site)
    monkeypatch.setenv("BENCHFLOW_REGISTRY_URL", f"{server.url}/ours.json")
    monkeypatch.setenv("BENCHFLOW_HARBOR_REGISTRY_URL", f"{server.url}/harbor.json")
    yield server.url
    server.close()


@pytest.mark.parametrize(("spec", "where"), [("alpha@1.0", "ours"), ("terminal-bench@2.0", "harbor"),
                                             ("alpha@2.0", "harbor")])
def test_without_a_registry_ours_is_read_first_then_harbors(registries, spec, where):
    loaded, version = open_dataset(parse_dataset_ref(spec), None, None)
    assert loaded.location == f"{registries}/{where}.json" and version.ref == spec


def test_a_dataset_in_neither_registry_names_both(registries):
    with pytest.raises(DatasetError) as err:
        open_dataset(parse_dataset_ref("nope@1"), None, None)
    message = str(err.value)
    assert f"{registries}/ours.json: no dataset 'nope'" in message
    assert f"{registries}/harbor.json: no dataset 'nope'" in message and "\n" not in message


def test_harbor_names_harbors_registry_and_its_network_pins_are_github_only(registries):
    loaded, version = open_dataset(parse_dataset_ref("terminal-bench@2.0"), "harbor", None)
    assert loaded.location == f"{registries}/harbor.json" and not loaded.local
    with pytest.raises(DatasetError, match="not a github.com repository"):
        resolve_dataset("terminal-bench@2.0")
