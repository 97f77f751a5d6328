"""Registry datasets and repository sources resolved against local git repositories and a loopback hub."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from benchflow.datasets import resolve_dataset
from benchflow.datasets.registry import parse_dataset_ref, parse_registry
from benchflow.datasets.repo_targets import fetch_repo, looks_like_repo, parse_target
from benchflow.errors import ConfigError, DatasetError
from benchflow.tasks.digest import task_digest
from tests.registry_repos import commit_all, entry, task_repo, write_registry
from tests.doubles.static_site import StaticSite


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("BENCHFLOW_CACHE", str(root))
    return root


@pytest.fixture
def two_datasets(tmp_path):
    alpha, sha_a = task_repo(tmp_path / "repos", "alpha", ["a1", "a2", "a3"])
    beta, sha_b = task_repo(tmp_path / "repos", "beta", ["b1"], folder="bench")
    registry = write_registry(tmp_path / "registry.json", [
        entry(alpha, sha_a, "alpha", "1.0", ["a1", "a2", "a3"]),
        entry(beta, sha_b, "beta", "2", ["b1"], folder="bench", bench_version=">=0.10,<0.11"),
    ])
    return {"alpha": alpha, "beta": beta, "registry": registry, "sha_a": sha_a}


def test_a_dataset_is_fetched_at_its_commit_verified_and_recorded(cache, two_datasets):
    got = resolve_dataset("alpha@1.0", registry=str(two_datasets["registry"]))
    assert [p.name for p in got.dirs] == ["a1", "a2", "a3"]
    assert all(p.is_relative_to(cache) and (p / "task.md").is_file() for p in got.dirs)
    assert not any((p / ".git").exists() for p in got.dirs)
    assert got.dataset_name == "alpha" and got.dataset_version == "1.0"
    assert got.source["commit"] == two_datasets["sha_a"] and got.source["path"] == "tasks"
    assert got.registry_digests["a2"] == task_digest(got.dirs[1])


def test_the_cache_serves_a_second_resolve_without_the_repository(cache, two_datasets):
    first = resolve_dataset("alpha@1.0", registry=str(two_datasets["registry"]))
    shutil.rmtree(two_datasets["alpha"])
    again = resolve_dataset("alpha@1.0", registry=str(two_datasets["registry"]))
    assert again.dirs == first.dirs


def test_a_task_whose_content_differs_from_its_digest_is_refused_by_name(cache, tmp_path):
    repo, _ = task_repo(tmp_path / "repos", "gamma", ["good", "bad"])
    digests = {"bad": task_digest(repo / "tasks" / "bad")}
    (repo / "tasks" / "bad" / "oracle" / "solve.sh").write_text("#!/bin/sh\nrm -rf /app\n")
    sha = commit_all(repo)
    registry = write_registry(tmp_path / "r.json", [entry(repo, sha, "gamma", "1", ["good", "bad"], digests=digests)])
    with pytest.raises(DatasetError, match=r"task bad: content digest sha256:\w+ does not match"):
        resolve_dataset("gamma@1", registry=str(registry))
    assert not list((cache / "datasets" / "tasks").glob(f"{digests['bad'][7:]}/*"))


def test_a_pin_that_is_not_in_the_repository_is_refused(cache, tmp_path):
    repo, sha = task_repo(tmp_path / "repos", "delta", ["t"])
    rows = entry(repo, sha, "delta", "1", ["t"])
    rows["tasks"][0]["git_commit_id"] = "0" * 40
    registry = write_registry(tmp_path / "r.json", [rows])
    with pytest.raises(DatasetError, match="git"):
        resolve_dataset("delta@1", registry=str(registry))


@pytest.mark.parametrize("text", ["alpha", "alpha@", "@1.0", "alpha@latest", "a/b/c@1"])
def test_a_dataset_spec_without_a_pinned_version_is_a_usage_error(text):
    with pytest.raises(ConfigError) as err:
        parse_dataset_ref(text)
    assert err.value.exit_code == 2 and "\n" not in str(err.value)


def test_unknown_names_and_versions_list_what_the_registry_has(cache, two_datasets):
    with pytest.raises(DatasetError, match=r"no dataset 'gamma' \(it has: alpha, beta\)"):
        resolve_dataset("gamma@1", registry=str(two_datasets["registry"]))
    with pytest.raises(DatasetError, match=r"alpha has no version '9' \(it has: 1.0\)"):
        resolve_dataset("alpha@9", registry=str(two_datasets["registry"]))


def test_bench_version_range_refuses_unless_ignored(cache, tmp_path):
    repo, sha = task_repo(tmp_path / "repos", "old", ["t"])
    registry = write_registry(tmp_path / "r.json", [entry(repo, sha, "old", "1", ["t"], bench_version=">=0.6,<0.7")])
    with pytest.raises(DatasetError, match="--ignore-bench-version"):
        resolve_dataset("old@1", registry=str(registry))
    assert resolve_dataset("old@1", registry=str(registry), ignore_bench_version=True).dirs


def test_registry_entries_are_checked_field_by_field():
    with pytest.raises(DatasetError, match=r"entry 0: tasks.0.digest"):
        parse_registry([{"name": "x", "version": "1", "tasks": [{"name": "t", "digest": "md5:1", "archive_url": "a"}]}], "r.json")
    with pytest.raises(DatasetError, match="git_url, git_commit_id and path, or archive_url"):
        parse_registry([{"name": "x", "version": 1, "tasks": [{"name": "t", "digest": "sha256:" + "0" * 64}]}], "r.json")
    with pytest.raises(DatasetError, match="a registry is a JSON list"):
        parse_registry({"name": "x"}, "r.json")


def _tar_gz(task: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(task, arcname=task.name)
    return buffer.getvalue()


def test_a_hub_registry_serves_archive_tasks_verified_like_git_ones(cache, tmp_path):
    repo, _ = task_repo(tmp_path / "src", "hubbed", ["h1", "h2"])
    site = tmp_path / "site"
    (site / "api").mkdir(parents=True)
    (site / "archives").mkdir()
    rows = []
    for name in ("h1", "h2"):
        (site / "archives" / f"{name}.tar.gz").write_bytes(_tar_gz(repo / "tasks" / name))
        rows.append({"name": name, "archive_url": f"../archives/{name}.tar.gz",
                     "digest": task_digest(repo / "tasks" / name)})
    rows[1]["digest"] = task_digest(repo / "tasks" / "h1")  # h2's archive is not what this pins
    (site / "api" / "registry.json").write_text(json.dumps([{"name": "org/set", "version": "0.1", "tasks": rows}]))
    hub = StaticSite(site)
    try:
        with pytest.raises(DatasetError, match="task h2: content digest"):
            resolve_dataset("org/set@0.1", hub=hub.url)
        rows.pop()
        (site / "api" / "registry.json").write_text(json.dumps([{"name": "org/set", "version": "0.1", "tasks": rows}]))
        got = resolve_dataset("org/set@0.1", registry=f"hub:{hub.url}")
    finally:
        hub.close()
    assert [p.name for p in got.dirs] == ["h1"] and task_digest(got.dirs[0]) == rows[0]["digest"]
    assert got.source["registry"] == f"{hub.url}/api/registry.json"


def test_a_registry_from_the_network_may_pin_github_only(cache, tmp_path):
    repo, sha = task_repo(tmp_path / "src", "local", ["t"])
    site = tmp_path / "site"
    (site / "api").mkdir(parents=True)
    (site / "api" / "registry.json").write_text(json.dumps([entry(repo, sha, "org/x", "1", ["t"])]))
    hub = StaticSite(site)
    try:
        with pytest.raises(DatasetError, match="not a github.com repository"):
            resolve_dataset("org/x@1", hub=hub.url)
    finally:
        hub.close()


def test_an_org_dataset_needs_a_hub(cache, monkeypatch, two_datasets):
    monkeypatch.delenv("BENCHFLOW_HUB_URL", raising=False)
    with pytest.raises(ConfigError, match="BENCHFLOW_HUB_URL"):
        resolve_dataset("org/x@1")


@pytest.mark.parametrize(("target", "url", "path", "ref"), [
    ("org/repo", "BASE/org/repo", "", None),
    ("org/repo/tasks/one@v1", "BASE/org/repo", "tasks/one", "v1"),
    ("github:org/repo.git@main", "BASE/org/repo", "", "main"),
    ("file:///srv/repo.git@abc", "file:///srv/repo.git", "", "abc"),
    ("https://host.example/org/repo.git", "https://host.example/org/repo.git", "", None),
])
def test_repository_targets_parse(monkeypatch, target, url, path, ref):
    monkeypatch.setenv("BENCHFLOW_GITHUB_BASE", "BASE")
    assert looks_like_repo(target)
    got = parse_target(target)
    assert (got.url, got.path, got.ref) == (url, path, ref)


def test_a_repository_target_at_a_commit_is_reused_without_git(cache, tmp_path, monkeypatch):
    repo, sha = task_repo(tmp_path / "gh" / "org", "tasks-repo", ["r1", "r2"])
    monkeypatch.setenv("BENCHFLOW_GITHUB_BASE", (tmp_path / "gh").as_uri())
    first = fetch_repo(parse_target(f"org/tasks-repo/tasks@{sha}"))
    assert [p.name for p in first.dirs] == ["r1", "r2"] and first.source["commit"] == sha
    shutil.rmtree(repo)
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert fetch_repo(parse_target(f"org/tasks-repo/tasks@{sha}")).dirs == first.dirs


def test_an_archive_reaching_outside_its_folder_is_refused(cache, tmp_path):
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        data = b"owned\n"
        info = tarfile.TarInfo("../../outside.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    registry = write_registry(tmp_path / "r.json", [{"name": "x", "version": "1", "tasks": [
        {"name": "t", "archive_url": str(evil), "digest": "sha256:" + "0" * 64}]}])
    with pytest.raises(DatasetError, match="task t: .* not a readable tar.gz"):
        resolve_dataset("x@1", registry=str(registry))
    assert not list(tmp_path.rglob("outside.txt"))


def test_a_registry_fetched_once_is_read_from_the_cache_when_the_network_is_gone(cache, tmp_path):
    from benchflow.datasets.registry_load import load_registry

    site = tmp_path / "site"
    (site / "api").mkdir(parents=True)
    (site / "api" / "registry.json").write_text(json.dumps([{"name": "org/x", "version": "1", "tasks": []}]))
    hub = StaticSite(site)
    try:
        first = load_registry(f"hub:{hub.url}")
    finally:
        hub.close()
    again = load_registry(f"hub:{hub.url}")
    assert [v.ref for v in again.versions] == [v.ref for v in first.versions] == ["org/x@1"]


def test_a_run_config_names_its_tasks_by_source_or_dataset():
    from benchflow.jobs.config_file import build_run_spec

    spec = build_run_spec(options={"source": {"repo": "org/repo", "path": "tasks", "ref": "main"}})
    assert (spec.source_repo, spec.source_path, spec.source_ref) == ("org/repo", "tasks", "main")
    spec = build_run_spec(options={"dataset": "alpha@1.0", "registry": "r.json", "ignore_bench_version": True})
    assert (spec.dataset, spec.registry, spec.ignore_bench_version) == ("alpha@1.0", "r.json", True)
    with pytest.raises(ConfigError, match="unknown key 'source_branch'"):
        build_run_spec(options={"source": {"repo": "org/repo", "branch": "main"}})


def test_symlinks_in_a_fetched_repository_never_reach_the_host_or_a_run(cache, tmp_path, monkeypatch):
    secret = tmp_path / "host-secret"
    secret.mkdir()
    (secret / "key").write_text("do not copy\n")
    repo, _ = task_repo(tmp_path / "gh" / "org", "links", ["plain"])
    (repo / "tasks" / "evil").symlink_to(secret)
    (repo / "tasks" / "plain" / "environment" / "key").symlink_to(secret / "key")
    sha = commit_all(repo)
    registry = write_registry(tmp_path / "r.json", [entry(repo, sha, "links", "1", ["plain"]) | {"tasks": [
        {"name": "evil", "git_url": repo.as_uri(), "git_commit_id": sha, "path": "tasks/evil",
         "digest": task_digest(secret)}]}])
    with pytest.raises(DatasetError, match="task evil: not found"):
        resolve_dataset("links@1", registry=str(registry))
    monkeypatch.setenv("BENCHFLOW_GITHUB_BASE", (tmp_path / "gh").as_uri())
    fetched = fetch_repo(parse_target(f"org/links/tasks@{sha}"))
    assert [p.name for p in fetched.dirs] == ["plain"]
    assert not (fetched.dirs[0] / "environment" / "key").exists()
    assert not list(cache.rglob("key"))
