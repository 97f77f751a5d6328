"""A job folder written before the feature sections (flat ``run_config`` keys: ``skills_dir``,
``verifier_sandbox``, ``checkpoint_keep`` …) resumes as it would have: its finished trial is reused, none is
"run with other settings"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.unit.test_run_config_sections import copy_old_job


@pytest.mark.docker
def test_an_old_job_folder_resumes_with_its_finished_trial_reused(tmp_path: Path) -> None:
    job = copy_old_job(tmp_path)
    trial = next(job.glob("hello__*"))
    kept = (trial / "result.json").read_bytes()
    for _ in range(2):  # the old shape, then the sections it is stored with once resumed
        done = run_bench("eval", "resume", str(job))
        assert done.returncode == 0, done.stderr
        assert "0 to run, 1 reused" in done.stderr and "other settings" not in done.stderr
        assert not (job / ".set-aside").exists()
    assert (trial / "result.json").read_bytes() == kept
    stored = json.loads((job / "evaluation.json").read_text())["run_config"]
    assert stored["skills"]["dir"].endswith("extra-skills") and stored["verifier"]["sandbox"] == "separate"
    assert "skills_dir" not in stored and "verifier_sandbox" not in stored
