"""The run's skill policy on Docker: --task-skills, --no-task-skills, --skills-dir, self-gen.

The ``bundled-skills`` oracle can write the stamp only when the task's
``environment/skills`` was deployed, and the tally only when the ``--skills-dir``
skill was, so each reward shows what really reached the sandbox.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, ROOT, run_bench

pytestmark = pytest.mark.docker

SKILLS = ROOT / "tests" / "fixtures" / "skills"


def _run(tmp_path: Path, name: str, *flags: str, task: str = "bundled-skills") -> tuple[dict, dict]:
    jobs = tmp_path / name
    done = run_bench("run", str(FIXTURE_TASKS / task), "-s", "docker", "--jobs-dir", str(jobs), *flags)
    assert done.returncode in (0, 1), done.stderr
    trial = next(jobs.rglob("result.json")).parent
    return json.loads((trial / "result.json").read_text()), json.loads((trial / "config.json").read_text())


def test_bundled_skills_only_with_task_skills(tmp_path: Path) -> None:
    result, config = _run(tmp_path, "off")
    assert result["rewards"] == {"reward": 0.0}  # left out by default
    assert config["skill_mode"] == "no-skill" and config["skill_source"] == "none"
    assert config["include_task_skills"] is False and config["skills_sandbox_dir"] is None

    result, config = _run(tmp_path, "on", "--task-skills")
    assert result["rewards"] == {"reward": 0.5}
    assert config["skill_source"] == "task" and config["include_task_skills"] is True
    assert config["skills_sandbox_dir"] == "$HOME/.agents/skills"
    assert config["effective_skills_dir"].endswith("bundled-skills/environment/skills")


def test_skills_dir_adds_its_skills(tmp_path: Path) -> None:
    result, config = _run(tmp_path, "both", "--task-skills", "--skills-dir", str(SKILLS / "extra-skills"))
    assert result["rewards"] == {"reward": 1.0}
    assert config["skill_mode"] == "with-skill"  # implied by --skills-dir
    assert config["skill_source"] == "task+skills-dir"
    assert config["requested_skills_dir"] == str(SKILLS / "extra-skills")


def test_no_task_skills_drops_a_declared_skills_dir(tmp_path: Path) -> None:
    task = tmp_path / "task-skills"
    shutil.copytree(FIXTURE_TASKS / "task-skills", task)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(jobs), "--no-task-skills")
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(next(jobs.rglob("result.json")).read_text())
    assert result["rewards"] == {"reward": 0.0}  # the oracle could solve it only with the skill


def test_self_gen_deploys_only_the_skill_creator(tmp_path: Path) -> None:
    result, config = _run(tmp_path, "self", "--task-skills", "--skill-mode", "self-gen",
                          "--skill-creator-dir", str(SKILLS))
    assert result["rewards"] == {"reward": 0.0}  # no task skill under self-gen
    assert config["skill_mode"] == "self-gen" and config["skill_source"] == "skill-creator"
    trial = next((tmp_path / "self").rglob("result.json")).parent
    prompts = json.loads((trial / "prompts.json").read_text())
    assert prompts[0].startswith("Before you work on the task below, write the skills")
