"""Property: import (task.toml -> task.md) then export (task.md -> task.toml) keeps the task.

The reference says migration keeps every TaskConfig field and the instruction
text, and that export restores the unknown keys import set aside. Hypothesis
builds legacy tasks with odd strings (YAML look-alikes, quotes, unicode,
control characters, reserved Markdown headings in the instruction) and checks
all three. Import may refuse a conversion it cannot make exact, but then it
must say so and write nothing: it is never silently lossy.
"""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from benchflow.errors import TaskError
from benchflow.tasks import load_task, read_legacy
from benchflow.tasks.export import export_task
from benchflow.tasks.migrate import migrate_task

TRICKY = ["yes", "no", "null", "~", "1.0", "0x10", "- item", "a: b", "'quoted'", '"dq"', "#hash",
          "---", "multi\nline", "ends\n", " padded ", "ünïcödé", "tab\tchar", "[REPLACE: x]", "*star",
          "&anchor", "nel\x85", "bell\x07"]
texts = st.one_of(st.sampled_from(TRICKY),
                  st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=12))
names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
seconds = st.one_of(st.integers(1, 10_000), st.floats(0.5, 10_000, allow_nan=False, allow_infinity=False))
env_names = st.from_regex(r"[A-Z][A-Z0-9_]{0,6}", fullmatch=True)
metadata_values = st.one_of(texts, st.integers(-1000, 1000), st.booleans(), st.lists(texts, max_size=3))

instruction_lines = st.one_of(
    st.sampled_from(["## prompt", "## role:judge", "## scene:s1", "## user-persona", "# Title",
                     "---", "", "  indented", "```", "- bullet"]),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30),
)


@st.composite
def legacy_tasks(draw: Any) -> tuple[dict[str, Any], str]:
    toml: dict[str, Any] = {}
    if draw(st.booleans()):
        toml["version"] = draw(st.sampled_from(["1.0", "1.1", "1.3"]))
    if draw(st.booleans()):
        toml["metadata"] = draw(st.dictionaries(names, metadata_values, max_size=4))
    if draw(st.booleans()):
        toml["agent"] = {"timeout_sec": draw(seconds)}
        if draw(st.booleans()):
            toml["agent"]["prompt_prefix"] = draw(st.sampled_from(["Be careful.", "yes", "## prompt"]))
    verifier: dict[str, Any] = {}
    if draw(st.booleans()):
        verifier["timeout_sec"] = draw(seconds)
    if draw(st.booleans()):
        verifier["env"] = draw(st.dictionaries(env_names, texts, max_size=3))
    if verifier:
        toml["verifier"] = verifier
    environment: dict[str, Any] = {}
    if draw(st.booleans()):
        environment["cpus"] = draw(st.integers(1, 16))
        environment["memory_mb"] = draw(st.integers(256, 65536))
    if draw(st.booleans()):
        environment["network_mode"] = draw(st.sampled_from(["public", "no-network"]))
    if draw(st.booleans()):
        environment["docker_image"] = draw(st.sampled_from(["ubuntu:24.04", "python:3.12-slim"]))
    if draw(st.booleans()):
        environment["modal"] = {"gpu": draw(texts)}  # unknown: kept by import, restored by export
    if environment:
        toml["environment"] = environment
    if draw(st.booleans()):
        toml["solution"] = {"env": draw(st.dictionaries(env_names, texts, max_size=2))}
    if draw(st.booleans()):
        toml["x_custom"] = {"note": draw(texts)}  # unknown top-level table
    lines = draw(st.lists(instruction_lines, min_size=1, max_size=8))
    first = draw(st.text(st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=20))
    return toml, "\n".join([first, *lines]) + "\n"


def _unknown(toml: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "x_custom" in toml:
        out["x_custom"] = toml["x_custom"]
    if "modal" in toml.get("environment", {}):
        out["environment"] = {"modal": toml["environment"]["modal"]}
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(legacy_tasks())
def test_import_then_export_keeps_config_instruction_and_extras(case: tuple[dict[str, Any], str]) -> None:
    toml, instruction = case
    with tempfile.TemporaryDirectory() as scratch:
        legacy = Path(scratch) / "task"
        (legacy / "environment").mkdir(parents=True)
        (legacy / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
        (legacy / "task.toml").write_text(tomli_w.dumps(toml))
        (legacy / "instruction.md").write_text(instruction)
        original = read_legacy(legacy).config

        try:
            migrate_task(legacy, remove_legacy=True)
        except TaskError as exc:
            assert str(exc).startswith("refusing to import: "), exc
            assert not (legacy / "task.md").exists() and (legacy / "task.toml").is_file()
            event("import refused")
            return
        event("imported")
        native = load_task(legacy)
        assert native.layout == "task-md"
        assert native.config == original
        assert native.instruction == instruction.strip()

        out = Path(scratch) / "out"
        export_task(legacy, out)
        assert read_legacy(out).config == original
        assert (out / "instruction.md").read_text().strip() == instruction.strip()
        exported = tomllib.loads((out / "task.toml").read_text())
        unknown = _unknown(toml)
        for key, value in unknown.items():
            if key == "environment":
                assert exported["environment"]["modal"] == value["modal"]
            else:
                assert exported[key] == value
