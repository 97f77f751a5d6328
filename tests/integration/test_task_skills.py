"""sandbox.skills_dir: the task's skills are deployed where the agent looks for them (Docker)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_TASKS, run_bench
from tests.integration.test_agent_pipeline import fake_agent_file

pytestmark = pytest.mark.docker


def copy_task(tmp_path: Path) -> Path:
    task = tmp_path / "tasks" / "task-skills"
    shutil.copytree(FIXTURE_TASKS / "task-skills", task)
    return task


def result_of(jobs: Path) -> dict:
    return json.loads(next(jobs.rglob("result.json")).read_text())


def test_oracle_solves_only_with_the_deployed_skill(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 0, done.stderr
    assert result_of(tmp_path / "jobs")["rewards"] == {"reward": 1.0}
    # without the skill the same oracle fails: the skill really was what solved it
    text = (task / "task.md").read_text().replace("  skills_dir: environment/skills\n", "")
    (task / "task.md").write_text(text)
    again = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs2"))
    assert result_of(tmp_path / "jobs2")["rewards"] == {"reward": 0.0}, again.stderr


def test_registry_skill_path_of_an_agent_user(tmp_path: Path) -> None:
    task = copy_task(tmp_path)
    steps = [{"op": "tool", "id": "t1", "run": "sh $HOME/.fake/skills/greeter/scripts/greet.sh > /app/greeting.txt; "
                                               "stat -c %U $HOME/.fake/skills/greeter > /app/owner.txt"}]
    agent = fake_agent_file(tmp_path, skill_paths=["$HOME/.fake/skills"],
                            env={"FAKE_ACP_SCRIPT": json.dumps({"prompts": [steps]})})
    done = run_bench("run", str(task), "-s", "docker", "--jobs-dir", str(tmp_path / "jobs"), "-a", str(agent))
    assert done.returncode == 0, done.stderr + done.stdout
    assert result_of(tmp_path / "jobs")["rewards"] == {"reward": 1.0}
