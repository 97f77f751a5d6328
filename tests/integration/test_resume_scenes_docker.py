"""bench run --config with scenes, run again: other scenes refuse the resume (naming scenes), the same reuse it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task


def config(path: Path, model: str) -> Path:
    path.write_text(json.dumps({"scenes": [{"name": "pair", "roles": [
        {"name": "writer", "agent": "claude-agent-acp", "model": model}]}]}))
    return path


@pytest.mark.docker
def test_a_run_config_with_other_scenes_does_not_reuse_the_finished_trial(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
    jobs = tmp_path / "jobs"
    args = ["run", str(tmp_path / "tasks"), "-a", "oracle", "-s", "docker", "--jobs-dir", str(jobs),
            "--job-name", "j"]
    first = run_bench(*args, "--config", str(config(tmp_path / "a.json", "m1")))
    assert first.returncode == 0, first.stderr
    trial = next((jobs / "j").glob("hello__*"))
    assert json.loads((trial / "config.json").read_text())["scenes"][0]["roles"][0]["model"] == "m1"
    refused = run_bench(*args, "--config", str(config(tmp_path / "b.json", "m2")))
    assert refused.returncode == 2
    assert "hello: scenes" in refused.stderr and "--restart-changed" in refused.stderr
    again = run_bench(*args, "--config", str(tmp_path / "a.json"))
    assert again.returncode == 0, again.stderr
    assert [p.name for p in (jobs / "j").glob("hello__*")] == [trial.name]  # reused, not run again
