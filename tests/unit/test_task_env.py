"""Host variables a task reads (``${NAME}``) under --allow-task-env, masking their values, and task folders
that must not lead out of the task."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchflow.errors import TaskError, VerifierError
from benchflow.tasks import load_task
from benchflow.tasks.check import check_task
from benchflow.tasks.task_env import env_problems, env_reads, resolve_task_env
from benchflow.util.scrub import scrub_document, scrub_folder
from benchflow.verify.environment import verifier_task_env

SECRET = "s3cr3t-value-from-the-host"
FRONTMATTER = """---
schema_version: '1.3'
verifier:
  env: {TOKEN: '${HOST_VAR}', MODE: '${UNNAMED:-dflt}', PLAIN: fixed}
sandbox:
  env: {SANDBOX_TOKEN: 'Bearer ${HOST_VAR}'}
  setup_commands: [{command: 'true', env: {SETUP: '${SETUP_VAR}'}}]
oracle:
  env: {ORACLE_MODE: '${UNNAMED:-oracle-dflt}'}
%s---

## prompt

Do it.
"""


def make_task(root: Path, extra: str = "", name: str = "reader") -> Path:
    task = root / name
    for folder in ("environment", "verifier", "oracle"):
        (task / folder).mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (task / "verifier" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
    (task / "oracle" / "solve.sh").write_text("#!/bin/sh\ntrue\n")
    (task / "task.md").write_text(FRONTMATTER % extra)
    return task


HOST = {"HOST_VAR": SECRET, "UNNAMED": "the-host-value-of-unnamed", "SETUP_VAR": "setup-value-123"}


def test_every_env_map_of_the_config_is_read(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path))
    reads = {(r.where, r.name, r.default) for r in env_reads(task.config)}
    assert reads == {("verifier.env.TOKEN", "HOST_VAR", None), ("verifier.env.MODE", "UNNAMED", "dflt"),
                     ("sandbox.env.SANDBOX_TOKEN", "HOST_VAR", None),
                     ("sandbox.setup_commands[0].env.SETUP", "SETUP_VAR", None),
                     ("oracle.env.ORACLE_MODE", "UNNAMED", "oracle-dflt")}


def test_an_unnamed_variable_without_default_is_a_problem_naming_key_variable_and_flag(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path))
    problems = env_problems(task, [], HOST)
    assert len(problems) == 3
    assert problems[0].startswith("verifier.env.TOKEN reads ${HOST_VAR}")
    assert "--allow-task-env HOST_VAR" in problems[0]
    assert any("--allow-task-env SETUP_VAR" in p for p in problems)
    assert env_problems(task, ["HOST_VAR", "SETUP_VAR"], HOST) == []
    unset = env_problems(task, ["HOST_VAR", "SETUP_VAR"], {"SETUP_VAR": "x"})
    assert len(unset) == 2 and all("does not set" in p and "${HOST_VAR}" in p for p in unset)


def test_allowed_names_get_the_host_value_and_others_only_their_default(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path))
    resolved, used = resolve_task_env(task, ["HOST_VAR", "SETUP_VAR"], HOST)
    assert resolved.config.verifier.env == {"TOKEN": SECRET, "MODE": "dflt", "PLAIN": "fixed"}
    assert resolved.config.sandbox.env == {"SANDBOX_TOKEN": f"Bearer {SECRET}"}
    assert resolved.config.oracle.env == {"ORACLE_MODE": "oracle-dflt"}  # UNNAMED is set, but not allowed
    assert resolved.config.sandbox.setup_commands[0].env == {"SETUP": "setup-value-123"}
    assert used == {"HOST_VAR": SECRET, "SETUP_VAR": "setup-value-123"}
    assert task.config.verifier.env["TOKEN"] == "${HOST_VAR}"  # the loaded task is unchanged
    assert verifier_task_env(resolved)["TOKEN"] == SECRET


def test_an_unfilled_task_never_reads_the_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in HOST.items():
        monkeypatch.setenv(name, value)
    task = load_task(make_task(tmp_path))
    with pytest.raises(VerifierError, match=r"\$\{HOST_VAR\}.*--allow-task-env HOST_VAR"):
        verifier_task_env(task)
    task.config.verifier.env.pop("TOKEN")
    assert verifier_task_env(task) == {"MODE": "dflt", "PLAIN": "fixed"}


def test_check_reports_unnamed_variables_as_issues(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOST_VAR", SECRET)
    monkeypatch.setenv("SETUP_VAR", "x")
    path = make_task(tmp_path)
    refused = check_task(path)
    assert any("${HOST_VAR}" in i and "--allow-task-env HOST_VAR" in i for i in refused.issues)
    assert check_task(path, allow_task_env=["HOST_VAR", "SETUP_VAR"]).ok


def test_scrub_masks_every_form_keeps_lengths_and_follows_no_link(tmp_path: Path) -> None:
    quoted = 'pa"ss\\wörd-value'
    trial = tmp_path / "trial"
    (trial / "verifier").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text(f"host file {SECRET}\n")
    (trial / "verifier" / "test-stdout.txt").write_text(f"token={SECRET}\n")
    (trial / "verifier" / "link.txt").symlink_to(outside)
    (trial / "verifier" / "data.json").write_text(json.dumps({"v": quoted, "n": 1.0}))
    traj = trial / "trajectory.jsonl"
    traj.write_text(json.dumps({"text": f"x {SECRET}"}, ensure_ascii=True) + "\n")
    traj.chmod(0o600)
    changed = scrub_folder(trial, [SECRET, quoted, "short"])
    assert sorted(p.name for p in changed) == ["data.json", "test-stdout.txt", "trajectory.jsonl"]
    assert (trial / "verifier" / "test-stdout.txt").read_text() == "token=" + "*" * len(SECRET) + "\n"
    assert json.loads((trial / "verifier" / "data.json").read_text())["n"] == 1.0  # still JSON
    assert quoted not in (trial / "verifier" / "data.json").read_text()
    assert oct(traj.stat().st_mode & 0o777) == "0o600"
    assert outside.read_text() == f"host file {SECRET}\n"  # the link was not followed
    assert (trial / "verifier" / "link.txt").is_symlink()
    doc = scrub_document({"error": f"bad {SECRET}", "reward": 1}, [SECRET])
    assert doc == {"error": "bad " + "*" * len(SECRET), "reward": 1}


@pytest.mark.parametrize("declared", ["../outside", "/tmp", "sub/../../outside"])
def test_a_declared_path_outside_the_task_is_refused(tmp_path: Path, declared: str) -> None:
    (tmp_path / "outside").mkdir()
    path = make_task(tmp_path, f"benchflow: {{verifier: {{path: '{declared}'}}}}\n")
    with pytest.raises(TaskError, match=r"^task\.md: benchflow\.verifier\.path .* must be a folder inside the task"):
        load_task(path)
    report = check_task(path)  # an issue, not a traceback
    assert len(report.issues) == 1 and "benchflow.verifier.path" in report.issues[0]


@pytest.mark.parametrize("key", ["verifier", "oracle"])
def test_a_declared_path_that_links_out_of_the_task_is_refused(tmp_path: Path, key: str) -> None:
    (tmp_path / "outside").mkdir()
    path = make_task(tmp_path, f"benchflow: {{{key}: {{path: mine}}}}\n")
    (path / "mine").symlink_to(tmp_path / "outside")
    with pytest.raises(TaskError, match=rf"benchflow\.{key}\.path: leads out of the task folder through a link"):
        load_task(path)


@pytest.mark.parametrize("folder", ["environment", "verifier", "oracle"])
def test_a_task_folder_that_is_a_link_out_is_refused(tmp_path: Path, folder: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = make_task(tmp_path)
    os.rename(path / folder, outside / folder)
    (path / folder).symlink_to(outside / folder)
    with pytest.raises(TaskError, match=rf"^{folder}/: leads out of the task folder"):
        load_task(path)


def test_a_link_that_stays_inside_the_task_is_fine(tmp_path: Path) -> None:
    path = make_task(tmp_path, "benchflow: {verifier: {path: checks}}\n")
    (path / "checks").symlink_to(path / "verifier")
    assert load_task(path).paths.verifier_dir == path / "checks"
