"""``bench export``: the split layout, the loss report, and the destination rules."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import pytest

from benchflow.errors import TaskError, UserError
from benchflow.tasks import load_task, read_legacy
from benchflow.tasks.export import REPORT_PATH, export_task
from benchflow.tasks.migrate import migrate_task

PLAIN = """\
---
schema_version: '1.3'
metadata: {difficulty: easy}
agent: {timeout_sec: 120}
verifier: {timeout_sec: 30}
sandbox: {cpus: 2, memory_mb: 1024}
oracle: {env: {GREETING: hi}}
---

## prompt

Create hello.txt containing "hello".
"""


def make_task(root: Path, text: str = PLAIN) -> Path:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
    (root / "verifier").mkdir()
    (root / "verifier" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (root / "verifier" / "test.sh").chmod(0o755)
    (root / "oracle").mkdir()
    (root / "oracle" / "solve.sh").write_text("#!/bin/bash\necho hello > hello.txt\n")
    (root / "task.md").write_text(text)
    return root


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_plain_task_exports_lossless(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "hello")
    out = tmp_path / "out"
    report = export_task(task_dir, out)
    assert report.status == "lossless" and report.losses == []
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == sorted([REPORT_PATH, "environment/Dockerfile", "instruction.md", "solution/solve.sh",
                            "task.toml", "tests/test.sh"])
    assert (out / "tests" / "test.sh").stat().st_mode & 0o111
    toml = tomllib.loads((out / "task.toml").read_text())
    assert toml["version"] == "1.3"
    assert toml["environment"] == {"cpus": 2, "memory_mb": 1024}
    assert toml["solution"] == {"env": {"GREETING": "hi"}}
    assert "sandbox" not in toml and "schema_version" not in toml
    assert (out / "instruction.md").read_text() == 'Create hello.txt containing "hello".\n'
    assert read_legacy(out).config.model_dump() == load_task(task_dir).config.model_dump()

    data = json.loads((out / REPORT_PATH).read_text())
    assert data["target"] == "harbor" and data["status"] == "lossless"
    assert data["selected_entrypoint"] == "task.md"
    assert data["selected_prompt"] == "task.md#prompt"
    assert (data["selected_oracle_dir"], data["selected_verifier_dir"]) == ("oracle", "verifier")
    assert data["source_task_dir"] == str(task_dir.resolve())
    assert data["emitted_files"] == files
    assert data["input_hashes"] == {rel: sha256(task_dir / rel) for rel in
                                    ["environment/Dockerfile", "oracle/solve.sh", "task.md", "verifier/test.sh"]}
    assert data["output_hashes"] == {rel: sha256(out / rel) for rel in files if rel != REPORT_PATH}
    assert data["losses"] == [] and data["restored_extension_paths"] == []


MULTI = """\
---
agents:
  roles:
    coder: {agent: claude-agent-acp}
    reviewer: {agent: codex-acp}
scenes:
  - name: review
    turns: [coder, reviewer]
user: {model: scripted}
benchflow:
  provenance: {origin: test}
---

## prompt

Build it.

## role:coder

You write code.

## user-persona

A busy person.
"""


def test_multi_agent_task_is_degraded_with_each_loss(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "multi", MULTI)
    (task_dir / "prompts").mkdir()
    (task_dir / "prompts" / "scene.review.md").write_text("Review the code.\n")
    report = export_task(task_dir, report_only=True)
    assert report.status == "degraded"
    by_path = {loss.path: loss.severity for loss in report.losses}
    assert by_path == {"agents.roles": "loss", "scenes": "loss", "user": "loss", "## role:coder": "loss",
                       "## scene:review": "loss", "## user-persona": "loss", "benchflow.provenance": "warning"}
    assert report.to_json()["status"] == "degraded"


def test_benchflow_keys_alone_stay_lossless(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "t", PLAIN.replace("---\n\n", "benchflow: {nudges: []}\n---\n\n", 1))
    report = export_task(task_dir, report_only=True)
    assert [(x.path, x.severity) for x in report.losses] == [("benchflow.nudges", "warning")]
    assert report.status == "lossless"


def test_alias_collisions_and_verifier_md(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "t")
    (task_dir / "solution").mkdir()
    (task_dir / "solution" / "solve.sh").write_text("old\n")
    (task_dir / "tests").mkdir()
    (task_dir / "task.toml").write_text('version = "1.0"\n')
    (task_dir / "verifier" / "verifier.md").write_text(
        "---\nverifier:\n  strategies:\n    tests: {type: script, command: ./test.sh}\n---\n")
    report = export_task(task_dir, tmp_path / "out")
    paths = {loss.path: loss.severity for loss in report.losses}
    assert paths == {"oracle|solution": "warning", "verifier|tests": "warning",
                     "task.md|task.toml": "warning", "verifier.verifier_md": "warning"}
    assert (tmp_path / "out" / "solution" / "solve.sh").read_text().startswith("#!/bin/bash")


def test_verifier_md_without_test_sh_is_a_loss(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "t")
    (task_dir / "verifier" / "test.sh").rename(task_dir / "verifier" / "grade.sh")
    (task_dir / "verifier" / "verifier.md").write_text(
        "---\nverifier:\n  strategies:\n    main: {type: script, command: ./grade.sh}\n---\n")
    report = export_task(task_dir, report_only=True)
    assert report.status == "degraded"
    assert [loss.path for loss in report.losses] == ["verifier.verifier_md"]


def test_report_only_writes_nothing(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "t")
    before = sorted(p.name for p in tmp_path.iterdir())
    report = export_task(task_dir, report_only=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert "task.toml" in report.output_hashes and REPORT_PATH in report.emitted_files


def test_compat_keys_are_restored(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "task.toml").write_text('version = "1.0"\n[environment]\ncpus = 2\n[environment.modal]\n'
                                      'image = "x"\n[custom]\nlevel = 3\n')
    (legacy / "instruction.md").write_text("Do it.\n")
    migrate_task(legacy, remove_legacy=True)
    report = export_task(legacy, tmp_path / "out")
    assert report.restored_extension_paths == ["sandbox.modal", "custom"]
    toml = tomllib.loads((tmp_path / "out" / "task.toml").read_text())
    assert toml["environment"] == {"cpus": 2, "modal": {"image": "x"}}
    assert toml["custom"] == {"level": 3}
    assert report.status == "lossless"


def test_destination_rules(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "t")
    out = tmp_path / "out"
    export_task(task_dir, out)
    with pytest.raises(UserError, match="--overwrite"):
        export_task(task_dir, out)
    (out / "stale.txt").write_text("old export leftovers")
    export_task(task_dir, out, overwrite=True)
    assert not (out / "stale.txt").exists() and (out / "task.toml").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "t"], "no staging or backup left"

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep")
    with pytest.raises(UserError, match="not an earlier export"):
        export_task(task_dir, foreign, overwrite=True)
    assert (foreign / "precious.txt").read_text() == "keep"
    for bad in (task_dir, task_dir / "sub", tmp_path):
        with pytest.raises(UserError, match="overlaps"):
            export_task(task_dir, bad, overwrite=True)
    (tmp_path / "empty").mkdir()
    export_task(task_dir, tmp_path / "empty")
    assert (tmp_path / "empty" / REPORT_PATH).is_file()


def test_argument_errors(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "t")
    with pytest.raises(UserError, match="task-toml"):
        export_task(task_dir, tmp_path / "o", target="swe-bench")
    with pytest.raises(UserError, match="OUTPUT_DIR is missing"):
        export_task(task_dir)
    with pytest.raises(UserError, match="--report-only"):
        export_task(task_dir, tmp_path / "o", report_only=True)
    with pytest.raises(TaskError):
        export_task(tmp_path / "missing", tmp_path / "o")
    assert export_task(task_dir, tmp_path / "h", target="harbor").target == "harbor"


def test_legacy_task_exports_too(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy"
    (legacy / "tests").mkdir(parents=True)
    (legacy / "tests" / "test.sh").write_text("#!/bin/bash\n")
    (legacy / "task.toml").write_text('version = "1.0"\n[agent]\ntimeout_sec = 10\n')
    (legacy / "instruction.md").write_text("Do it.\n")
    report = export_task(legacy, tmp_path / "out")
    assert report.selected_entrypoint == "task.toml" and report.selected_prompt == "instruction.md"
    assert report.selected_oracle_dir is None and report.selected_verifier_dir == "tests"
    assert read_legacy(tmp_path / "out").config == read_legacy(legacy).config


def test_unwritable_destination_is_a_user_error(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path / "t")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="cannot write the export there"):
        export_task(task_dir, tmp_path / "file" / "out")
