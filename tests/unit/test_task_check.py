"""check_task levels (contracts §1.10), verifier.md (§1.11), discovery (§1.1) and overlap (§7.6)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchflow.checks.target import runtime_target
from benchflow.errors import ConfigError
from benchflow.tasks import (
    check_task,
    discover_tasks,
    is_task_dir,
    resolve_collection_root,
)
from benchflow.tasks.capability import RuntimeTarget
from benchflow.tasks.overlap import overlap

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tasks" / "hello-world"
LEGACY = ROOT / "tests" / "fixtures" / "tasks" / "legacy-hello"


@dataclass(frozen=True)
class FakeCapabilities:
    """A capability table test double (the real ones belong to the sandbox backends)."""

    network_modes: frozenset = frozenset({"no-network", "public"})
    network_fallbacks: dict = field(default_factory=dict)
    snapshots: bool = False
    gpus: bool = False
    multi_service: bool = False
    build_from_dockerfile: bool = True
    resource_limits: bool = True


@pytest.fixture
def task(tmp_path) -> Path:
    dst = tmp_path / "hello"
    shutil.copytree(EXAMPLE, dst)
    return dst


def set_frontmatter(task: Path, old: str, new: str) -> None:
    md = task / "task.md"
    text = md.read_text()
    assert old in text
    md.write_text(text.replace(old, new))


def test_example_and_legacy_pass_structural():
    assert check_task(EXAMPLE).ok
    assert check_task(LEGACY).ok


def test_schema_level_stops_before_structure(task):
    shutil.rmtree(task / "environment")
    assert check_task(task, level="schema").ok
    assert check_task(task).issues == [
        "environment/: missing; add environment/Dockerfile that builds the task's sandbox"]


def test_schema_reports_every_config_problem(task):
    set_frontmatter(task, "agent: {timeout_sec: 120.0}", "agent: {timeout_sec: -1}\nagnet: {}")
    issues = check_task(task, level="schema").issues
    assert any("unknown key 'agnet' (did you mean 'agent'?)" in i for i in issues)
    assert any("'agent.timeout_sec'" in i for i in issues)


def test_placeholder_fails(task):
    (task / "task.md").write_text((task / "task.md").read_text() + "\n[REPLACE: say more]\n")
    assert any("placeholder" in i for i in check_task(task, level="schema").issues)


def test_placeholder_solve_sh(task):
    (task / "oracle" / "solve.sh").write_text("#!/bin/sh\n# [REPLACE: solve]\n")
    assert check_task(task).issues == ["oracle/solve.sh: still the placeholder oracle; write the reference solution"]


def test_missing_dockerfile_and_verifier(task):
    (task / "environment" / "Dockerfile").unlink()
    shutil.rmtree(task / "verifier")
    issues = check_task(task).issues
    assert issues[0].startswith("environment/Dockerfile: missing")
    assert any(i.startswith("verifier/: missing or empty") for i in issues)


def test_verifier_dir_without_test_sh(task):
    (task / "verifier" / "test.sh").rename(task / "verifier" / "other.sh")
    assert check_task(task).issues == ["verifier/test.sh: missing; add a test.sh that writes /logs/verifier/reward.txt"]


def test_alias_drift(task):
    shutil.copytree(task / "verifier", task / "tests")
    assert check_task(task).ok  # identical copies do not drift
    (task / "tests" / "test.sh").write_text("#!/bin/sh\necho 0 > /logs/verifier/reward.txt\n")
    assert any("alias drift" in i and i.startswith("verifier/ and tests/") for i in check_task(task).issues)
    (task / "instruction.md").write_text("half of a split layout")
    assert any(i.startswith("instruction.md: compatibility alias drift") for i in check_task(task).issues)


def test_verifier_md_strategy_files(task):
    (task / "verifier" / "verifier.md").write_text(
        "---\nverifier:\n  strategies:\n    main: {type: script, command: ./run.sh --fast}\n---\n")
    assert check_task(task).issues == ["verifier/run.sh: missing, but strategy 'main' needs it; add the file"]
    (task / "verifier" / "run.sh").write_text("#!/bin/sh\n")
    assert check_task(task).ok


def test_verifier_md_bad_strategy(task):
    (task / "verifier" / "verifier.md").write_text(
        "---\nverifier:\n  strategies:\n    main: {type: script, command: /bin/run}\n---\n")
    assert "no absolute path" in check_task(task).issues[0]
    (task / "verifier" / "verifier.md").write_text(
        "---\nverifier:\n  strategies:\n    main: {type: magic}\n---\n")
    assert "verifier/verifier.md" in check_task(task).issues[0]


def test_review_rubric_validity(task):
    (task / "verifier" / "rubric.json").write_text(json.dumps({"criteria": [{"name": "ok", "weight": 3}]}))
    assert any("needs integer 'blocker'" in i for i in check_task(task).issues)
    (task / "verifier" / "rubric.json").write_text(json.dumps(
        {"criteria": [{"name": "ok", "blocker": 0, "weight": 3}, {"name": "safe", "blocker": 1, "weight": 1}]}))
    assert check_task(task).ok


def test_publication_grade(task):
    issues = check_task(task, level="publication-grade").issues
    assert any(i.startswith("verifier/verifier.md: missing") for i in issues)
    (task / "verifier" / "verifier.md").write_text(
        "---\nverifier:\n  strategies:\n    main: {type: script, command: ./test.sh}\n"
        "  rubric:\n    dimensions:\n      task_success: {weight: 1}\n"
        "  outputs:\n    reward_json: /logs/verifier/reward.json\n---\n")
    (task / "verifier" / "rubrics").mkdir()
    (task / "verifier" / "rubrics" / "verifier.md").write_text("Score 1 when hello.txt is right.\n")
    assert check_task(task, level="publication-grade").ok
    assert not check_task(LEGACY, level="publication-grade").ok


def test_runtime_capability_refusals(task):
    caps = FakeCapabilities()
    assert check_task(task, level="runtime-capability", runtime=RuntimeTarget("fake", caps)).ok
    set_frontmatter(task, "sandbox: {network_mode: no-network, cpus: 1, memory_mb: 1024}",
                    "sandbox: {network_mode: allowlist, allowed_hosts: [pypi.org], gpus: 1, os: windows}")
    issues = check_task(task, level="runtime-capability", runtime=RuntimeTarget("fake", caps)).issues
    assert any(i.startswith("sandbox.network_mode 'allowlist' is not enforced on --sandbox fake") for i in issues)
    assert any(i.startswith("sandbox.gpus") for i in issues)
    assert any(i.startswith("sandbox.os 'windows'") for i in issues)
    roomy = FakeCapabilities(network_modes=frozenset({"no-network", "public", "allowlist"}), gpus=True)
    issues = check_task(task, level="runtime-capability", runtime=RuntimeTarget("fake", roomy)).issues
    assert [i.split(":")[0] for i in issues] == ["sandbox.os 'windows'"]


def test_network_fallback_is_a_warning(task):
    set_frontmatter(task, "network_mode: no-network", "network_mode: public")
    offline = FakeCapabilities(network_modes=frozenset({"no-network"}),
                               network_fallbacks={"public": "no-network"})
    report = check_task(task, runtime=RuntimeTarget("fake", offline))
    assert report.ok and report.warnings == ["sandbox.network_mode 'public' runs as 'no-network' on --sandbox fake"]
    strict = FakeCapabilities(network_modes=frozenset({"no-network"}))
    assert not check_task(task, runtime=RuntimeTarget("fake", strict)).ok


def test_runtime_capability_multi_service(task):
    (task / "environment" / "docker-compose.yaml").write_text("services:\n  main: {}\n  db: {}\n")
    issues = check_task(task, runtime=RuntimeTarget("fake", FakeCapabilities())).issues
    assert any("2 services" in i for i in issues)
    assert check_task(task, runtime=RuntimeTarget("fake", FakeCapabilities(multi_service=True))).ok


def test_levels_that_need_the_run_engine_are_refused(task):
    for level in ("acceptance-live", "equivalence"):  # they run in benchflow.checks.levels
        with pytest.raises(ConfigError, match="runs the task in a sandbox"):
            check_task(task, level=level)
    with pytest.raises(ConfigError, match="needs --sandbox"):
        check_task(task, level="runtime-capability")
    with pytest.raises(ConfigError, match="unknown level"):
        check_task(task, level="strict")


def test_unknown_sandbox_name_is_refused(task):
    with pytest.raises(ConfigError, match="unknown sandbox"):
        runtime_target("nonesuch")


def test_discovery(tmp_path):
    for name in ("b-task", "a-task", "hard-1"):
        (tmp_path / "tasks" / name).mkdir(parents=True)
        (tmp_path / "tasks" / name / "task.md").write_text("---\n---\nx")
    (tmp_path / "tasks" / "notes").mkdir()
    assert resolve_collection_root(tmp_path) == tmp_path / "tasks"
    assert [p.name for p in discover_tasks(tmp_path)] == ["a-task", "b-task", "hard-1"]
    assert [p.name for p in discover_tasks(tmp_path, include="hard-*")] == ["hard-1"]
    assert [p.name for p in discover_tasks(tmp_path, exclude=["a-task,hard-*"])] == ["b-task"]
    assert discover_tasks(tmp_path / "tasks" / "a-task") == [tmp_path / "tasks" / "a-task"]
    assert not is_task_dir(tmp_path / "tasks" / "notes")
    assert discover_tasks(tmp_path / "tasks" / "notes") == []


def test_overlap(tmp_path):
    left = tmp_path / "l.json"
    right = tmp_path / "r.json"
    left.write_text(json.dumps({"tasks": [{"task_id": "a", "digest": "sha256:1"},
                                          {"task_id": "b", "digest": "sha256:2"}]}))
    right.write_text(json.dumps({"tasks": [{"task_id": "b", "digest": "sha256:9"},
                                           {"task_id": "c", "digest": "sha256:1"}]}))
    report = overlap(left, right, out=tmp_path / "out" / "o.json")
    assert report["task_id_overlap"] == ["b"] and report["task_id_overlap_count"] == 1
    assert report["digest_overlap"] == [{"digest": "sha256:1", "left_task_id": "a", "right_task_id": "c"}]
    assert (report["left_count"], report["right_count"], report["schema_version"]) == (2, 2, 1)
    assert json.loads((tmp_path / "out" / "o.json").read_text()) == report


def test_runtime_target_reports_what_a_run_would_refuse_and_adapt(task):
    caps = FakeCapabilities()
    target = RuntimeTarget("fake", caps, adaptations=lambda _t: (["environment/docker-compose.yaml: bad"],
                                                                 ["sandbox.cpus 4 clamped to the host's 2"]))
    report = check_task(task, level="runtime-capability", runtime=target)
    assert report.issues == ["environment/docker-compose.yaml: bad"]
    assert "sandbox.cpus 4 clamped to the host's 2" in report.warnings
