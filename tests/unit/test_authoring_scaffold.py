"""``bench new`` scaffolding: the files, their defaults, and what ``check`` says about them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from benchflow.errors import UserError
from benchflow.tasks import check_task, load_task
from benchflow.tasks.scaffold import scaffold_task

MARKER = re.compile(r"\[REPLACE:[^\]]*\]")


def fill_placeholders(task_dir: Path) -> list[Path]:
    """Replace every [REPLACE: …] marker with plain text, as an author would; returns the files changed."""
    changed = []
    for path in sorted(task_dir.rglob("*")):
        if path.is_file():
            text = path.read_text()
            new = MARKER.sub("written by the author", text)
            if new != text:
                path.write_text(new)
                changed.append(path)
    return changed


def test_scaffold_writes_the_reference_layout(tmp_path: Path) -> None:
    result = scaffold_task("fix-bug", tmp_path / "tasks")
    task_dir = tmp_path / "tasks" / "fix-bug"
    assert result.task_dir == task_dir
    assert result.files == sorted([
        "task.md", "environment/Dockerfile", "verifier/test.sh", "verifier/test_outputs.py",
        "verifier/verifier.md", "verifier/rubrics/verifier.md", "verifier/rubrics/verifier.toml",
        "oracle/solve.sh",
    ])
    for rel in result.files:
        assert (task_dir / rel).is_file(), rel
    assert os.access(task_dir / "verifier/test.sh", os.X_OK)
    assert os.access(task_dir / "oracle/solve.sh", os.X_OK)
    assert not os.access(task_dir / "task.md", os.X_OK)
    assert [p.name for p in tmp_path.joinpath("tasks").iterdir()] == ["fix-bug"], "no staging folder left"


def test_scaffold_task_md_defaults(tmp_path: Path) -> None:
    scaffold_task("demo", tmp_path)
    task = load_task(tmp_path / "demo")
    assert task.layout == "task-md"
    config = task.config
    assert config.schema_version == "1.3"
    assert config.agent.timeout_sec == 300
    assert config.verifier.timeout_sec == 120
    assert config.sandbox.cpus == 1 and config.sandbox.memory_mb == 2048
    assert task.instruction.startswith("[REPLACE:")
    text = (tmp_path / "demo" / "task.md").read_text()
    assert "# demo\n\n## prompt\n\n" in text


def test_scaffold_dockerfile(tmp_path: Path) -> None:
    scaffold_task("demo", tmp_path)
    scaffold_task("plain", tmp_path, pytest=False)
    lines = (tmp_path / "demo/environment/Dockerfile").read_text().splitlines()
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert instructions[0] == "FROM ubuntu:24.04"
    assert "WORKDIR /app" in instructions
    assert "RUN mkdir -p /logs/verifier /logs/agent /logs/artifacts" in instructions
    assert "python3-pytest" in "\n".join(lines)
    assert "pytest" not in (tmp_path / "plain/environment/Dockerfile").read_text()


def test_no_pytest_and_no_oracle(tmp_path: Path) -> None:
    result = scaffold_task("bare", tmp_path, pytest=False, oracle=False)
    task_dir = result.task_dir
    assert not (task_dir / "verifier/test_outputs.py").exists()
    assert not (task_dir / "oracle").exists()
    assert "pytest" not in (task_dir / "verifier/test.sh").read_text()
    assert "[REPLACE:" in (task_dir / "verifier/test.sh").read_text()


@pytest.mark.parametrize("options", [{}, {"pytest": False}, {"oracle": False}])
def test_scaffold_fails_check_only_because_of_placeholders(tmp_path: Path, options: dict) -> None:
    task_dir = scaffold_task("demo", tmp_path, **options).task_dir
    report = check_task(task_dir, level="structural")
    assert not report.ok
    assert report.issues and all("placeholder" in issue for issue in report.issues), report.issues
    # The schema level stops at task.md; with it filled, the verifier's and the
    # oracle's placeholders must be what is left.
    task_md = task_dir / "task.md"
    task_md.write_text(MARKER.sub("written", task_md.read_text()))
    report = check_task(task_dir, level="structural")
    assert not report.ok
    assert all("placeholder" in issue for issue in report.issues), report.issues
    assert any(issue.startswith("verifier/") for issue in report.issues)
    if options.get("oracle", True):
        assert any(issue.startswith("oracle/") for issue in report.issues)

    assert fill_placeholders(task_dir)
    report = check_task(task_dir, level="structural")
    assert report.ok, report.issues
    assert report.warnings == []


def test_filled_scaffold_is_publication_grade(tmp_path: Path) -> None:
    task_dir = scaffold_task("demo", tmp_path).task_dir
    fill_placeholders(task_dir)
    report = check_task(task_dir, level="publication-grade")
    assert report.ok, report.issues


@pytest.mark.parametrize("name, fragment", [
    ("", "empty"),
    ("   ", "empty"),
    ("a/b", "path separator"),
    ("a\\b", "path separator"),
    (".hidden", "starts with a dot"),
    ("..", "starts with a dot"),
    ("my task", "whitespace"),
    (" lead", "whitespace"),
    ("tab\tname", "whitespace"),
    ("bell\x07", "control"),
])
def test_bad_names_are_refused(tmp_path: Path, name: str, fragment: str) -> None:
    with pytest.raises(UserError, match=fragment) as info:
        scaffold_task(name, tmp_path)
    assert info.value.exit_code == 2
    assert list(tmp_path.iterdir()) == []


def test_existing_target_is_refused(tmp_path: Path) -> None:
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="already exists"):
        scaffold_task("demo", tmp_path)
    assert (tmp_path / "demo" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]


def test_only_task_md_format(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="task-md"):
        scaffold_task("demo", tmp_path, fmt="task-toml")
    assert not (tmp_path / "demo").exists()


def test_parent_that_is_a_file_is_refused(tmp_path: Path) -> None:
    parent = tmp_path / "file"
    parent.write_text("x")
    with pytest.raises(UserError, match="not a directory"):
        scaffold_task("demo", parent)


def test_unwritable_parent_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="cannot create the task there"):
        scaffold_task("demo", tmp_path / "file" / "sub")
