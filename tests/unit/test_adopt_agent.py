"""The sandboxed conversion of ``bench eval adopt SOURCE`` (no Codex CLI on the host): which driver is
chosen, the task it runs, and how its package comes back (whole or not at all, no link that leads out)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchflow.adopt import agent_run
from benchflow.adopt.agent_run import AdoptionFailed, convert_in_sandbox, install_package
from benchflow.adopt.agent_task import write_task
from benchflow.adopt.convert import choose_driver
from benchflow.errors import UserError
from benchflow.sandbox import copyout
from benchflow.sandbox.copyout_writer import CopyLimits
from benchflow.tasks.model import load_task

# -- the driver ------------------------------------------------------------------------------------------------


def _codex_on(folder: Path) -> Path:
    folder.mkdir()
    codex = folder / "codex"
    codex.write_text("#!/bin/sh\n")
    codex.chmod(0o755)
    return codex


def test_the_host_codex_on_path_carries_the_conversion(tmp_path, monkeypatch):
    codex = _codex_on(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(codex.parent))
    assert choose_driver("codex", named=False, env={}).codex == str(codex)


def test_without_codex_on_path_a_benchflow_agent_carries_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    driver = choose_driver("codex", named=False, env={})
    assert (driver.codex, driver.agent) == (None, "codex-acp")
    assert choose_driver("codex", named=False, env={"BENCHFLOW_ADOPT_AGENT": "claude-agent-acp"}).agent == \
        "claude-agent-acp"
    assert "no 'codex' on PATH, so agent codex-acp runs it in a BenchFlow sandbox" in driver.says("codex")


def test_a_named_codex_binary_is_never_replaced_by_an_agent(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    driver = choose_driver("/opt/missing/codex", named=True, env={})
    assert (driver.codex, driver.agent) == ("/opt/missing/codex", None)


# -- the task --------------------------------------------------------------------------------------------------


def test_the_task_holds_the_source_and_the_scaffold_and_declares_the_package_its_artifact(tmp_path):
    source = tmp_path / "upstream"
    (source / "data").mkdir(parents=True)
    (source / "data" / "q.json").write_text("[1]")
    task_dir = write_task(tmp_path / "task", source=str(source), slug="up", existing=None,
                          env={"BENCHFLOW_ADOPT_IMAGE": "python:3.12-slim"})
    task = load_task(task_dir)
    assert [(a.source, a.destination) for a in task.config.artifacts] == [("/app/benchmarks/up", "up")]
    assert task.config.sandbox.network_mode == "no-network"
    assert "Adopt a benchmark into BenchFlow: up" in task.instruction
    assert f"Source benchmark: /app/source (a copy of {source})" in task.instruction
    assert "## How to convert" in task.instruction  # the guide's headings stay in the one prompt
    context = task_dir / "environment"
    assert (context / "Dockerfile").read_text().splitlines()[0] == "FROM python:3.12-slim"
    assert (context / "source" / "data" / "q.json").read_text() == "[1]"
    assert json.loads((context / "benchmarks" / "up" / "parity_experiment.json").read_text())["status"] == "template"
    assert os.access(task_dir / "verifier" / "test.sh", os.X_OK)


def test_an_existing_package_is_what_the_agent_continues(tmp_path):
    existing = tmp_path / "benchmarks" / "up"
    existing.mkdir(parents=True)
    (existing / "benchflow.py").write_text("# mine\n")
    source = tmp_path / "upstream"
    source.mkdir()
    task_dir = write_task(tmp_path / "task", source=str(source), slug="up", existing=existing, env={})
    package = task_dir / "environment" / "benchmarks" / "up"
    assert sorted(p.name for p in package.iterdir()) == ["benchflow.py"]
    assert (task_dir / "environment" / "Dockerfile").read_text().startswith("FROM debian:bookworm-slim\n")


def test_a_source_that_is_neither_a_path_nor_a_url_is_one_line(tmp_path):
    with pytest.raises(UserError, match="no such file or folder, and not a repository URL"):
        write_task(tmp_path / "task", source=str(tmp_path / "nope"), slug="up", existing=None, env={})


# -- the copy back ---------------------------------------------------------------------------------------------


def _produced(root: Path) -> Path:
    (root / "tasks" / "t1").mkdir(parents=True)
    (root / "benchflow.py").write_text("def convert(): ...\n")
    (root / "tasks" / "t1" / "instruction.md").write_text("Solve t1.\n")
    (root / "readme-link").symlink_to("benchflow.py")  # inside: kept as a link
    (root / "passwd").symlink_to("/etc/passwd")  # leads out: left out
    (root / "up").symlink_to("../secret")  # leads out: left out
    (root.parent / "secret").write_text("host secret\n")
    return root


def test_the_package_replaces_the_old_one_whole_and_no_link_leads_out(tmp_path):
    produced = _produced(tmp_path / "trial" / "up")
    target = tmp_path / "benchmarks" / "up"
    target.mkdir(parents=True)
    (target / "stale.py").write_text("old\n")
    note = install_package(produced, target)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == [
        "benchflow.py", "readme-link", "tasks", "tasks/t1", "tasks/t1/instruction.md"]
    assert os.readlink(target / "readme-link") == "benchflow.py"
    assert sorted(d["path"] for d in note["dropped"]) == ["passwd", "up"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["up"]  # no staging or old folder left


def test_a_copy_stopped_by_a_cap_leaves_the_old_package_and_nothing_beside_it(tmp_path, monkeypatch):
    produced = _produced(tmp_path / "trial" / "up")
    (produced / "big.bin").write_bytes(b"x" * 10_000)
    target = tmp_path / "benchmarks" / "up"
    target.mkdir(parents=True)
    (target / "benchflow.py").write_text("old\n")
    monkeypatch.setattr(copyout, "DEFAULT_LIMITS", CopyLimits(total_bytes=4096))
    with pytest.raises(AdoptionFailed, match="is unchanged"):
        install_package(produced, target)
    assert sorted(p.name for p in target.iterdir()) == ["benchflow.py"]
    assert (target / "benchflow.py").read_text() == "old\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["up"]


def test_a_file_cut_short_by_the_per_file_cap_is_not_installed(tmp_path, monkeypatch):
    produced = _produced(tmp_path / "trial" / "up")
    (produced / "big.bin").write_bytes(b"x" * 10_000)
    target = tmp_path / "benchmarks" / "up"
    monkeypatch.setattr(copyout, "DEFAULT_LIMITS", CopyLimits(file_bytes=1000))
    with pytest.raises(AdoptionFailed, match="1 file\\(s\\) over the per-file cap"):
        install_package(produced, target)
    assert list((tmp_path / "benchmarks").iterdir()) == []


def test_a_stopped_copy_with_no_old_package_leaves_no_package(tmp_path, monkeypatch):
    produced = _produced(tmp_path / "trial" / "up")
    (produced / "big.bin").write_bytes(b"x" * 10_000)
    monkeypatch.setattr(copyout, "DEFAULT_LIMITS", CopyLimits(total_bytes=4096))
    with pytest.raises(AdoptionFailed):
        install_package(produced, tmp_path / "benchmarks" / "up")
    assert list((tmp_path / "benchmarks").iterdir()) == []


# -- what the finished trial decides ---------------------------------------------------------------------------


def _trial(job: Path, result: dict, package: dict[str, str] | None) -> None:
    trial = job / "adopt-up__abc"
    (trial / "artifacts").mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps(result))
    if package is not None:
        for rel, text in package.items():
            (trial / "artifacts" / "up" / rel).parent.mkdir(parents=True, exist_ok=True)
            (trial / "artifacts" / "up" / rel).write_text(text)


def _convert(tmp_path: Path, monkeypatch, result: dict, package: dict[str, str] | None,
             said: list[str] | None = None) -> tuple[Path, list]:
    """convert_in_sandbox with the job run replaced by one that leaves ``result`` and ``package``."""
    import benchflow.jobs.api as api

    source = tmp_path / "upstream"
    source.mkdir(exist_ok=True)
    target = tmp_path / "benchmarks" / "up"
    specs = []

    def fake_run(spec, on_event=None):
        specs.append(spec)
        job = tmp_path / "jobs" / spec.job_name
        _trial(job, result, package)
        return SimpleNamespace(job_dir=job)

    monkeypatch.setattr(api, "run", fake_run)
    monkeypatch.setattr(agent_run, "_host_ca_bundle", lambda: None)
    convert_in_sandbox(str(source), "up", target, agent="codex-acp", model="gpt-5.2",
                       say=(said if said is not None else []).append,
                       jobs_dir=tmp_path / "jobs")
    return target, specs


def test_a_finished_trial_installs_its_package_and_runs_as_bench_run_would(tmp_path, monkeypatch):
    dropped = {"n_dropped": 1, "dropped": [{"path": "leak", "reason": "absolute or empty symbolic link"}], "n_cut": 0,
               "stopped": None}
    result = {"error": None, "rewards": {"reward": 1.0},
              "copy_out_info": {"artifacts": {"/app/benchmarks/up": {"copy": dropped}}}}
    said: list[str] = []
    target, specs = _convert(tmp_path, monkeypatch, result, {"benchflow.py": "new\n"}, said)
    assert (target / "benchflow.py").read_text() == "new\n"
    assert f"left out of {target}: leak (absolute or empty symbolic link)" in said
    (spec,) = specs
    assert (spec.agent, spec.model, spec.retry.attempts, spec.fresh) == ("codex-acp", "gpt-5.2", 0, True)


@pytest.mark.parametrize(("result", "package", "says"), [
    ({"error": "agent timed out after 3600s", "error_category": "agent_timeout"}, {"benchflow.py": "half\n"},
     "agent codex-acp failed \\(agent_timeout: agent timed out"),
    ({"error": None, "copy_out_info": {"artifacts": {"/app/benchmarks/up": {"missing": "/app/benchmarks/up"}}}},
     None, "left no /app/benchmarks/up/ in its sandbox"),
    ({"error": None, "copy_out_info": {"artifacts": {"/app/benchmarks/up": {"copy": {"stopped": "read 1 bytes"}}}}},
     {"benchflow.py": "half\n"}, "copied out only in part \\(read 1 bytes\\)"),
    ({"error": None, "copy_out_info": {"artifacts": {"/app/benchmarks/up": {"copy": {"n_cut": 1, "stopped": None}}}}},
     {"benchflow.py": "half\n"}, "copied out only in part \\(1 file"),
])
def test_a_failed_or_partial_conversion_leaves_the_host_package_as_it_was(tmp_path, monkeypatch, result, package,
                                                                          says):
    target = tmp_path / "benchmarks" / "up"
    target.mkdir(parents=True)
    (target / "benchflow.py").write_text("old\n")
    with pytest.raises(AdoptionFailed, match=says):
        _convert(tmp_path, monkeypatch, result, package)
    assert (target / "benchflow.py").read_text() == "old\n"
