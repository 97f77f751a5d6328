"""bench hub list|show|inspect|check on a registry file, and the dataset flags of bench run as a user types them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.registry_repos import entry, task_repo, write_registry


@pytest.fixture
def registry(tmp_path) -> Path:
    alpha, sha_a = task_repo(tmp_path / "repos", "alpha", ["a1", "a2", "a3", "a4"])
    beta, sha_b = task_repo(tmp_path / "repos", "beta", ["b1"], folder="bench")
    return write_registry(tmp_path / "registry.json", [
        entry(alpha, sha_a, "alpha", "1.0", ["a1", "a2", "a3", "a4"], description="four tasks"),
        entry(beta, sha_b, "beta", "2", ["b1"], folder="bench"),
    ])


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    return {"BENCHFLOW_CACHE": str(tmp_path / "cache")}


def test_hub_list_shows_each_version_with_its_task_count(registry, env):
    done = run_bench("hub", "list", "--registry", str(registry), env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["alpha@1.0", "4", "tasks", "four", "tasks"]
    assert lines[1].split() == ["beta@2", "1", "task"]
    raw = json.loads(run_bench("hub", "list", "--registry", str(registry), "--json", "--search", "beta", env=env).stdout)
    assert [(d["name"], d["version"]) for d in raw] == [("beta", "2")]


def test_hub_show_lists_tasks_with_digests(registry, env):
    done = run_bench("hub", "show", "alpha@1.0", "--registry", str(registry), env=env)
    assert done.returncode == 0, done.stderr
    pinned = {t["name"]: t["digest"] for t in json.loads(registry.read_text())[0]["tasks"]}
    rows = dict(line.split() for line in done.stdout.splitlines()[1:])
    assert rows == pinned
    same = run_bench("hub", "show", "alpha", "--version", "1.0", "--registry", str(registry), "--json", env=env)
    assert json.loads(same.stdout)["tasks"][0]["digest"] == pinned["a1"]


def test_hub_inspect_prints_a_file_of_a_fetched_task(registry, env):
    done = run_bench("hub", "inspect", "beta@2", "--registry", str(registry), "--path", "b1/oracle/solve.sh", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "#!/bin/sh\necho hello > /app/hello.txt\n"
    missing = run_bench("hub", "inspect", "beta@2", "--registry", str(registry), "--path", "b1/nope.txt", env=env)
    assert missing.returncode == 1 and "b1 has no file 'nope.txt'" in missing.stderr


def test_hub_check_inventories_then_checks_representative_tasks(registry, env, tmp_path):
    done = run_bench("hub", "check", "--registry", str(registry), "--tasks-per-dataset", "2", env=env)
    assert done.returncode == 0, done.stderr
    picked = [line.split()[2] for line in done.stdout.splitlines() if line.startswith("ok")]
    assert picked == ["a1", "a3", "b1"]
    out = tmp_path / "rows.jsonl"
    checked = run_bench("hub", "check", "--registry", str(registry), "--level", "check", "--limit", "2",
                        "--cache-dir", str(tmp_path / "hc"), "--out", str(out), env=env)
    assert checked.returncode == 0, checked.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["task"], r["digest_ok"], r["issues"]) for r in rows] == [("a1", True, []), ("a3", True, [])]
    assert (tmp_path / "hc" / "tasks").is_dir()


def test_hub_check_fails_a_task_that_does_not_match_its_digest(registry, env, tmp_path):
    data = json.loads(registry.read_text())
    data[1]["tasks"][0]["digest"] = data[0]["tasks"][0]["digest"]
    registry.write_text(json.dumps(data))
    done = run_bench("hub", "check", "--registry", str(registry), "--level", "check",
                     "--cache-dir", str(tmp_path / "hc"), env=env)
    assert done.returncode == 1
    assert any(line.startswith("FAIL") and " b1 " in line and "does not match" in line for line in done.stdout.splitlines())


def test_primeintellect_without_the_prime_cli_says_how_to_install_it(tmp_path, env):
    no_prime = {**env, "PATH": os.path.dirname(os.sys.executable)}
    done = run_bench("hub", "list", "--provider", "primeintellect", env=no_prime)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "uv tool install prime" in done.stderr


@pytest.mark.parametrize(("args", "needle"), [
    (["run", "-d", "alpha"], "give name@version"),
    (["hub", "show", "alpha"], "give name@version"),
    (["run", "--registry", "r.json", "tasks"], "--registry is only valid with --dataset"),
    (["run", "--source-path", "tasks"], "only valid with --source-repo"),
    (["run", "-d", "alpha@1.0", "--source-repo", "org/repo"], "--dataset and --source-repo both name the tasks"),
])
def test_bad_dataset_flags_are_one_line_usage_errors(args, needle, env):
    done = run_bench(*args, env=env)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr and done.stderr.strip().count("\n") == 0


def test_dry_run_of_a_dataset_samples_deterministically_and_records_the_source(registry, env, tmp_path):
    def planned(seed: str) -> list[str]:
        done = run_bench("run", "-d", "alpha@1.0", "--registry", str(registry), "-n", "2", "--sample-seed", seed,
                         "--dry-run", "--sandbox", "docker", env=env)
        assert done.stdout, done.stderr
        plan = json.loads(done.stdout)
        assert plan["dataset_name"] == "alpha" and plan["dataset_version"] == "1.0"
        assert plan["source"]["path"] == "tasks" and len(plan["source"]["commit"]) == 40
        return [t["name"] for t in plan["tasks"]]

    first = planned("7")
    assert first == planned("7") and len(first) == 2
    assert len({tuple(planned(str(seed))) for seed in range(6)}) > 1


def test_source_repo_and_repository_targets_plan_the_same_tasks(tmp_path, env):
    _repo, sha = task_repo(tmp_path / "gh" / "org", "bench-tasks", ["r1", "r2"])
    env = {**env, "BENCHFLOW_GITHUB_BASE": (tmp_path / "gh").as_uri()}
    ways = [["--source-repo", "org/bench-tasks", "--source-path", "tasks", "--source-ref", "main"],
            [f"org/bench-tasks/tasks@{sha}"], [f"github:org/bench-tasks/tasks/r2@{sha}"]]
    plans = []
    for way in ways:
        done = run_bench("run", *way, "--dry-run", "--sandbox", "docker", env=env)
        assert done.stdout, done.stderr
        plans.append(json.loads(done.stdout))
    assert [[t["name"] for t in p["tasks"]] for p in plans] == [["r1", "r2"], ["r1", "r2"], ["r2"]]
    assert {p["source"]["commit"] for p in plans} == {sha}
    assert plans[0]["source"]["repo"] == "org/bench-tasks" and plans[0]["source"]["ref"] == "main"


def test_primeintellect_drives_the_prime_cli_and_keeps_its_exit_code(tmp_path, env):
    import sys

    from tests.conftest import ROOT

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    prime = bin_dir / "prime"
    prime.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'doubles' / 'fake_prime_cli.py'} \"$@\"\n")
    prime.chmod(0o755)
    with_prime = {**env, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    listed = run_bench("hub", "list", "--provider", "primeintellect", "--owner", "will", env=with_prime)
    assert listed.returncode == 0 and json.loads(listed.stdout) == {"prime": ["env", "list", "--owner", "will"]}
    shown = run_bench("hub", "show", "primeintellect/general-agent", "--version", "0.2", env=with_prime)
    assert json.loads(shown.stdout) == {"prime": ["env", "info", "primeintellect/general-agent@0.2"]}
    missing = run_bench("hub", "show", "missing/env", env=with_prime)
    assert missing.returncode == 3
