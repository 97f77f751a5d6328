"""The run card refuses a scene whose role names an agent that does not resolve, up front (one line naming the
task, the role and the agent), instead of failing the trial when that turn comes."""

from __future__ import annotations

from pathlib import Path

from benchflow.scenes.run_config import parse_run_scenes
from benchflow.scenes.plan import run_issues
from benchflow.jobs.spec import RunSpec
from benchflow.tasks import load_task
from tests.conftest import run_bench


def write_task(root: Path, roles: str) -> Path:
    (root / "environment").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    (root / "verifier").mkdir()
    (root / "verifier" / "test.sh").write_text("#!/bin/sh\n")
    (root / "task.md").write_text(f"---\nschema_version: '1.3'\nagents:\n  roles:\n{roles}"
                                  "scenes:\n  - turns: [writer, reviewer]\n---\n\n## prompt\nBuild it.\n")
    return root


def test_a_role_agent_missing_from_the_registry_is_refused_by_the_dry_run(tmp_path):
    task = write_task(tmp_path / "review-task", "    writer: {agent: claude-agent-acp}\n"
                      "    reviewer: {agent: no-such-agent}\n")
    out = run_bench("run", str(task), "-a", "claude-agent-acp", "--dry-run")
    assert out.returncode != 0
    refusals = [line.strip() for line in out.stderr.splitlines() if line.strip().startswith("refuse:")]
    assert len(refusals) == 1
    assert refusals[0].startswith("refuse: review-task: role reviewer (agent no-such-agent): unknown agent "
                                  "'no-such-agent'")


def test_known_agents_pass_and_a_run_config_role_may_name_an_agent_file(tmp_path):
    task = load_task(write_task(tmp_path / "t", "    writer: {agent: claude-agent-acp}\n"
                                "    reviewer: {agent: codex-acp}\n"))
    assert run_issues(task, RunSpec(agent="claude-agent-acp")) == ([], [])
    missing = parse_run_scenes("run.yaml", [{"roles": [{"name": "writer", "agent": "claude-agent-acp"},
                                                       {"name": "critic", "agent": str(tmp_path / "gone.toml")}]}])
    issues, _ = run_issues(task, RunSpec(agent="claude-agent-acp", scenes=missing))
    assert len(issues) == 1 and issues[0].startswith(f"role critic (agent {tmp_path / 'gone.toml'}): ")
    assert run_issues(task, RunSpec(agent="oracle", scenes=missing)) == ([], [])  # the oracle plays no role
