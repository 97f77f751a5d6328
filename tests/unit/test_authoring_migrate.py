"""``bench import`` (task.toml + instruction.md -> task.md) and ``bench tasks normalize``."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchflow.errors import TaskError, UserError
from benchflow.tasks import load_task, parse_task_md, read_legacy
from benchflow.tasks.migrate import first_difference, migrate_task, normalize_task

HELLO_TOML = """\
version = "1.0"
[metadata]
author_name = "benchflow"
difficulty = "easy"
tags = ["sanity", "hello-world"]
[agent]
timeout_sec = 300
[verifier]
timeout_sec = 60
[environment]
cpus = 1
memory_mb = 2048
"""


def make_legacy(root: Path, toml: str = HELLO_TOML, instruction: str = "Write hello.txt.\n",
                dirs: tuple[str, ...] = ("tests", "solution")) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "task.toml").write_text(toml)
    (root / "instruction.md").write_text(instruction)
    (root / "environment").mkdir()
    (root / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    if "tests" in dirs:
        (root / "tests").mkdir()
        (root / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    if "solution" in dirs:
        (root / "solution").mkdir()
        (root / "solution" / "solve.sh").write_text("#!/bin/bash\necho hello > hello.txt\n")
    return root


def test_migrate_writes_declared_keys_and_prompt(tmp_path: Path) -> None:
    task_dir = make_legacy(tmp_path / "hello")
    legacy = read_legacy(task_dir).config
    result = migrate_task(task_dir)
    assert result.task_md == task_dir / "task.md"
    frontmatter, body = parse_task_md((task_dir / "task.md").read_text())
    assert list(frontmatter) == ["schema_version", "metadata", "agent", "verifier", "sandbox"]
    assert frontmatter["schema_version"] == "1.0"
    assert frontmatter["sandbox"] == {"cpus": 1, "memory_mb": 2048}
    assert body == "## prompt\n\nWrite hello.txt.\n"
    task = load_task(task_dir)
    assert task.layout == "task-md"
    assert task.config.model_dump() == legacy.model_dump()
    assert task.instruction == "Write hello.txt."
    # the legacy files stay unless asked
    assert (task_dir / "task.toml").is_file() and (task_dir / "tests").is_dir()


def test_unknown_keys_go_to_compat(tmp_path: Path) -> None:
    toml = HELLO_TOML + '[environment.modal]\nimage = "x"\n[custom]\nlevel = 3\n'
    task_dir = make_legacy(tmp_path / "t", toml)
    result = migrate_task(task_dir)
    assert result.preserved_extra == ["sandbox.modal", "custom"]
    frontmatter, _ = parse_task_md((task_dir / "task.md").read_text())
    compat = frontmatter["benchflow"]["compat"]
    assert compat["source"] == "legacy"
    assert compat["extra_paths"] == ["sandbox.modal", "custom"]
    assert compat["extra"] == {"sandbox": {"modal": {"image": "x"}}, "custom": {"level": 3}}
    assert "modal" not in frontmatter["sandbox"]


def test_reserved_headings_in_instruction_survive(tmp_path: Path) -> None:
    instruction = "Intro.\n\n## prompt\n\nMore.\n## role:judge\nlast\n"
    task_dir = make_legacy(tmp_path / "t", instruction=instruction)
    migrate_task(task_dir)
    assert "\n\\## prompt\n" in (task_dir / "task.md").read_text()
    assert load_task(task_dir).instruction == instruction.strip()


def test_refuses_existing_task_md_without_overwrite(tmp_path: Path) -> None:
    task_dir = make_legacy(tmp_path / "t")
    (task_dir / "task.md").write_text("mine")
    with pytest.raises(UserError, match="--overwrite"):
        migrate_task(task_dir)
    assert (task_dir / "task.md").read_text() == "mine"
    migrate_task(task_dir, overwrite=True)
    assert load_task(task_dir).instruction == "Write hello.txt."


def test_refuses_a_lossy_instruction(tmp_path: Path) -> None:
    # A line that already looks like an escaped heading would lose its backslash.
    task_dir = make_legacy(tmp_path / "t", instruction="Intro\n\\## prompt\nrest\n")
    with pytest.raises(TaskError, match="refusing to import"):
        migrate_task(task_dir)
    assert not (task_dir / "task.md").exists()


def test_refuses_a_value_yaml_cannot_hold(tmp_path: Path) -> None:
    task_dir = make_legacy(tmp_path / "t", HELLO_TOML.replace('difficulty = "easy"', "started = 07:32:00"))
    with pytest.raises(TaskError, match="task.toml: a value cannot be written as YAML"):
        migrate_task(task_dir)
    assert not (task_dir / "task.md").exists()


@pytest.mark.parametrize("missing, fragment", [("task.toml", "task.toml: missing"),
                                               ("instruction.md", "instruction.md: missing")])
def test_needs_both_legacy_files(tmp_path: Path, missing: str, fragment: str) -> None:
    task_dir = make_legacy(tmp_path / "t")
    (task_dir / missing).unlink()
    with pytest.raises(TaskError, match=fragment):
        migrate_task(task_dir)


def test_empty_instruction_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="instruction.md: is empty"):
        migrate_task(make_legacy(tmp_path / "a", instruction="  \n"))
    with pytest.raises(TaskError, match="task.toml"):
        migrate_task(make_legacy(tmp_path / "b", toml="[agent\n"))
    with pytest.raises(UserError, match="not a folder"):
        migrate_task(tmp_path / "nope")


def test_remove_legacy_promotes_aliases(tmp_path: Path) -> None:
    task_dir = make_legacy(tmp_path / "t")
    result = migrate_task(task_dir, remove_legacy=True)
    assert result.removed == ["task.toml", "instruction.md"]
    assert result.renamed == [("tests", "verifier"), ("solution", "oracle")]
    assert sorted(p.name for p in task_dir.iterdir()) == ["environment", "oracle", "task.md", "verifier"]
    assert (task_dir / "verifier" / "test.sh").is_file()
    task = load_task(task_dir)
    assert task.paths.verifier_dir.name == "verifier" and task.paths.oracle_dir.name == "oracle"


def test_remove_legacy_keeps_alias_when_native_exists(tmp_path: Path) -> None:
    task_dir = make_legacy(tmp_path / "t")
    (task_dir / "verifier").mkdir()
    (task_dir / "verifier" / "test.sh").write_text("#!/bin/bash\n")
    result = migrate_task(task_dir, remove_legacy=True)
    assert result.renamed == [("solution", "oracle")]
    assert (task_dir / "tests" / "test.sh").is_file()
    assert any("tests/ kept" in w for w in result.warnings)


def test_first_difference() -> None:
    assert first_difference({"a": {"b": 1}}, {"a": {"b": 1}}) is None
    assert first_difference({"a": {"b": 1}}, {"a": {"b": 2}}) == "a.b"
    assert first_difference({"a": [1, 2]}, {"a": [1, 3]}) == "a.1"
    assert first_difference({"a": 1}, {"a": 1, "z": 0}) == "z"


def write_task_md(task_dir: Path, text: str) -> Path:
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / "task.md").write_text(text)
    return task_dir


MINIMAL = "---\nprofile: leaderboard-local\nname: fix-it\nimage: python:3.12\n---\nFix the bug.\n"


def test_normalize_expands_profiles_and_shorthands(tmp_path: Path) -> None:
    task_dir = write_task_md(tmp_path / "t", MINIMAL)
    result = normalize_task(task_dir)
    assert result.written is None
    frontmatter, body = parse_task_md(result.text)
    assert "profile" not in frontmatter and "name" not in frontmatter and "image" not in frontmatter
    assert frontmatter["task"]["name"] == "benchflow/fix-it"
    assert frontmatter["sandbox"]["docker_image"] == "python:3.12"
    assert frontmatter["agent"]["timeout_sec"] == 3600
    assert frontmatter["sandbox"]["network_mode"] == "no-network"
    assert frontmatter["benchflow"]["authoring"] == {"profiles": ["leaderboard-local"], "normalized": True}
    assert body == "Fix the bug.\n"
    assert (task_dir / "task.md").read_text() == MINIMAL, "stdout mode writes nothing"


def test_normalize_is_idempotent_and_keeps_the_config(tmp_path: Path) -> None:
    task_dir = write_task_md(tmp_path / "t", MINIMAL)
    before = load_task(task_dir)
    first = normalize_task(task_dir, write=True)
    assert first.written == task_dir / "task.md"
    after = load_task(task_dir)
    assert after.config.model_dump() == before.config.model_dump()
    assert after.instruction == before.instruction
    assert normalize_task(task_dir).text == first.text


def test_normalize_output_path(tmp_path: Path) -> None:
    task_dir = write_task_md(tmp_path / "t", MINIMAL)
    out = tmp_path / "out" / "normalized.md"
    result = normalize_task(task_dir, output=out)
    assert result.written == out and out.read_text() == result.text
    (tmp_path / "folder").mkdir()
    assert normalize_task(task_dir, output=tmp_path / "folder").written == tmp_path / "folder" / "task.md"


def test_normalize_errors(tmp_path: Path) -> None:
    task_dir = write_task_md(tmp_path / "t", MINIMAL)
    with pytest.raises(UserError, match="not both"):
        normalize_task(task_dir, output=tmp_path / "x.md", write=True)
    legacy = make_legacy(tmp_path / "legacy")
    with pytest.raises(TaskError, match="bench import"):
        normalize_task(legacy)
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="cannot be written"):
        normalize_task(task_dir, output=tmp_path / "file" / "task.md")
    broken = write_task_md(tmp_path / "broken", "---\nprofile: no-such-profile\n---\nHi\n")
    with pytest.raises(TaskError, match="unknown profile"):
        normalize_task(broken, write=True)
    assert "no-such-profile" in (broken / "task.md").read_text()
