"""A no-skill run's image has no task skills; a with-skill run has them, and the deployed ones where
the agent looks (``tests/fixtures/tasks/skills-in-image``: its verifier scores 0.5 for the task's skills
baked anywhere in the image, 0.5 for a skill in an agent's skills folder, 0 when the rest of the build
context is missing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, ROOT, run_bench

TASK = FIXTURE_TASKS / "skills-in-image"
EXTRA_SKILLS = ROOT / "tests" / "fixtures" / "skills" / "extra-skills"


def _reward(tmp_path: Path, name: str, *flags: str, sandbox: str = "docker") -> tuple[float, str]:
    jobs = tmp_path / name
    done = run_bench("run", str(TASK), "-s", sandbox, "--jobs-dir", str(jobs), *flags)
    assert done.returncode in (0, 1), done.stderr
    trial = next(jobs.rglob("result.json")).parent
    result = json.loads((trial / "result.json").read_text())
    assert result["error"] is None, result["error"]
    stdout = trial / "verifier" / "test-stdout.txt"
    return result["rewards"]["reward"], stdout.read_text() if stdout.is_file() else ""


@pytest.mark.docker
def test_no_skill_run_builds_without_the_task_skills(tmp_path: Path) -> None:
    reward, seen = _reward(tmp_path, "no-skill", "-a", "nop")
    assert reward == 0.0, seen  # built (the Dockerfile's COPY skills ... was dropped), nothing baked or deployed


@pytest.mark.docker
def test_with_skill_run_keeps_them_and_deploys_where_the_agent_looks(tmp_path: Path) -> None:
    reward, seen = _reward(tmp_path, "with-skill", "-a", "nop", "--skills-dir", str(EXTRA_SKILLS))
    assert reward == 1.0, seen
    assert "/.agents/skills/tallier/SKILL.md" in seen


@pytest.mark.docker
def test_the_oracle_runs_the_task_as_authored(tmp_path: Path) -> None:
    reward, seen = _reward(tmp_path, "oracle")
    assert reward == 0.5, seen


@pytest.mark.local_sandbox
def test_the_local_sandbox_leaves_them_out_too(tmp_path: Path, cache: Path) -> None:
    reward, seen = _reward(tmp_path, "local-no-skill", "-a", "nop", sandbox="local")
    assert reward == 0.0, seen
    reward, seen = _reward(tmp_path, "local-task-skills", "-a", "nop", "--task-skills", sandbox="local")
    assert reward == 1.0, seen
