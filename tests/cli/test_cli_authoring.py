"""The authoring commands as a user types them: new, import, normalize, export (subprocess ``bench``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

LEGACY_TOML = """\
version = "1.0"
[metadata]
difficulty = "easy"
[agent]
timeout_sec = 300
[verifier]
timeout_sec = 60
[environment]
cpus = 1
memory_mb = 2048
[environment.modal]
gpu = "A10"
"""


def assert_user_error(proc, *fragments: str) -> None:
    """Exit 2, one ``error:`` line naming the problem, never a traceback."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ") or "Error" in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)


def make_legacy(root: Path) -> Path:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (root / "solution").mkdir()
    (root / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    (root / "task.toml").write_text(LEGACY_TOML)
    (root / "instruction.md").write_text("Say hello.\n")
    return root


def test_new_scaffolds_under_tasks(bench, tmp_path: Path) -> None:
    proc = bench("new", "hello", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Created task tasks/hello/" in proc.stdout
    assert "task.md" in proc.stdout and "[REPLACE: …]" in proc.stdout
    assert (tmp_path / "tasks/hello/verifier/test_outputs.py").is_file()
    assert (tmp_path / "tasks/hello/environment/Dockerfile").read_text().count("FROM ubuntu:24.04") == 1

    assert_user_error(bench("new", "hello", cwd=tmp_path), "tasks/hello", "already exists")


def test_new_task_fails_check_only_on_placeholders(bench, tmp_path: Path) -> None:
    assert bench("new", "todo", "--dir", str(tmp_path)).returncode == 0
    task_dir = tmp_path / "todo"
    proc = bench("check", str(task_dir))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    issues = [line for line in proc.stdout.splitlines() if line.strip().startswith("- ")]
    assert issues and all("[REPLACE: …]" in line or "placeholder" in line for line in issues), proc.stdout
    for path in task_dir.rglob("*"):
        if path.is_file():
            path.write_text(re.sub(r"\[REPLACE:[^\]]*\]", "filled in", path.read_text()))
    proc = bench("check", str(task_dir), "--level", "publication-grade")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)


def test_tasks_init_with_flags(bench, tmp_path: Path) -> None:
    proc = bench("tasks", "init", "bare", "--dir", str(tmp_path / "mine"), "--no-pytest", "--no-solution")
    assert proc.returncode == 0, proc.stderr
    task_dir = tmp_path / "mine" / "bare"
    assert (task_dir / "task.md").is_file()
    assert not (task_dir / "oracle").exists()
    assert not (task_dir / "verifier" / "test_outputs.py").exists()


@pytest.mark.parametrize("name, fragment", [("a/b", "path separator"), (".hidden", "starts with a dot"),
                                            ("two words", "whitespace")])
def test_new_refuses_bad_names(bench, tmp_path: Path, name: str, fragment: str) -> None:
    assert_user_error(bench("new", name, "--dir", str(tmp_path)), fragment)
    assert list(tmp_path.iterdir()) == []


def test_new_refuses_other_formats(bench, tmp_path: Path) -> None:
    assert_user_error(bench("new", "x", "--dir", str(tmp_path), "--format", "task-toml"),
                      "--format 'task-toml' is not supported", "task-md")


def test_import_then_remove_legacy(bench, tmp_path: Path) -> None:
    task_dir = make_legacy(tmp_path / "legacy")
    proc = bench("import", str(task_dir))
    assert proc.returncode == 0, proc.stderr
    assert "Wrote" in proc.stdout and "task.md" in proc.stdout
    assert "sandbox.modal" in proc.stdout
    text = (task_dir / "task.md").read_text()
    assert text.startswith("---\nschema_version: '1.0'\n") and "## prompt\n\nSay hello.\n" in text

    assert_user_error(bench("import", str(task_dir)), "task.md", "--overwrite")

    proc = bench("tasks", "migrate", str(task_dir), "--overwrite", "--remove-legacy")
    assert proc.returncode == 0, proc.stderr
    assert "Renamed tests/ -> verifier/" in proc.stdout and "Renamed solution/ -> oracle/" in proc.stdout
    assert sorted(p.name for p in task_dir.iterdir()) == ["environment", "oracle", "task.md", "verifier"]


def test_import_bad_inputs(bench, tmp_path: Path) -> None:
    native = tmp_path / "native"
    native.mkdir()
    (native / "task.md").write_text("---\n---\nHi\n")
    assert_user_error(bench("import", str(native)), "task.toml: missing")

    broken = make_legacy(tmp_path / "broken")
    (broken / "task.toml").write_text("[agent\ntimeout_sec = 1\n")
    assert_user_error(bench("import", str(broken)), "task.toml", "TOML")

    lossy = make_legacy(tmp_path / "lossy")
    (lossy / "instruction.md").write_text("Intro\n\\## prompt\n")
    assert_user_error(bench("import", str(lossy)), "refusing to import")
    assert not (lossy / "task.md").exists()

    assert_user_error(bench("import", str(tmp_path / "missing")), "not a folder")


def test_normalize(bench, tmp_path: Path) -> None:
    task_dir = tmp_path / "t"
    task_dir.mkdir()
    (task_dir / "task.md").write_text("---\nprofile: leaderboard-local\nname: demo\n---\nDo the thing.\n")
    proc = bench("tasks", "normalize", str(task_dir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("---\n")
    assert "name: benchflow/demo" in proc.stdout and "profile:" not in proc.stdout
    assert proc.stdout.endswith("---\n\nDo the thing.\n")

    out = tmp_path / "normalized.md"
    proc = bench("tasks", "normalize", str(task_dir), "-o", str(out))
    assert proc.returncode == 0 and out.read_text().startswith("---\n")
    assert_user_error(bench("tasks", "normalize", str(task_dir), "-o", str(out), "--write"), "not both")

    proc = bench("tasks", "normalize", str(task_dir), "--write")
    assert proc.returncode == 0 and "Wrote" in proc.stdout
    assert (task_dir / "task.md").read_text() == out.read_text()

    (task_dir / "task.md").write_text("---\nagnet: {}\n---\nHi\n")
    assert_user_error(bench("tasks", "normalize", str(task_dir)), "agnet", "agent")
    assert_user_error(bench("tasks", "normalize", str(make_legacy(tmp_path / "legacy"))), "bench import")


def test_export_and_report(bench, tmp_path: Path) -> None:
    bench("new", "demo", "--dir", str(tmp_path))
    task_dir, out = tmp_path / "demo", tmp_path / "out"
    proc = bench("export", str(task_dir), str(out))
    assert proc.returncode == 0, proc.stderr
    assert "(lossless," in proc.stdout and "compatibility/export-report.json" in proc.stdout
    assert (out / "task.toml").is_file() and (out / "tests" / "test.sh").is_file()
    assert json.loads((out / "compatibility" / "export-report.json").read_text())["status"] == "lossless"

    assert_user_error(bench("export", str(task_dir), str(out)), "--overwrite")
    assert bench("tasks", "export", str(task_dir), str(out), "--overwrite", "--target", "harbor").returncode == 0

    proc = bench("tasks", "export", str(task_dir), "--report-only")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["target"] == "harbor" and report["status"] == "lossless"
    assert "task.md" in report["input_hashes"]


def test_export_degraded_and_bad_inputs(bench, tmp_path: Path) -> None:
    bench("new", "multi", "--dir", str(tmp_path))
    task_dir = tmp_path / "multi"
    text = (task_dir / "task.md").read_text()
    (task_dir / "task.md").write_text(text.replace("---\n\n", "agents:\n  roles:\n    coder: {agent: x}\n---\n\n", 1)
                                      + "\n## role:coder\n\nWrite code.\n")
    proc = bench("export", str(task_dir), str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "(degraded," in proc.stdout
    assert "loss: agents.roles:" in proc.stdout and "loss: ## role:coder:" in proc.stdout

    assert_user_error(bench("export", str(task_dir), str(tmp_path / "o2"), "--target", "swe"), "task-toml")
    assert_user_error(bench("export", str(task_dir)), "OUTPUT_DIR is missing")
    (task_dir / "task.md").write_text("---\nagent: [\n---\nHi\n")
    assert_user_error(bench("export", str(task_dir), str(tmp_path / "o3")), "task.md line", "YAML error")
