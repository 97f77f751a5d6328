"""``--config-override`` end to end: a patch of a task config section reaches the trial, and config.json
records it (keys, content hash, patch); a section that decides the score is refused (contracts §7.5)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import WRITE_HELLO, make_task

pytestmark = pytest.mark.docker

NEEDS_PATCH = 'if [ "$(cat /app/patched 2>/dev/null)" = yes ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'
SOLVE = 'printf %s "${PATCHED:-no}" > /app/patched'


def test_a_patch_reaches_the_trial_and_is_recorded(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "needs-env", solve=SOLVE, test=NEEDS_PATCH)
    patch = {"oracle": {"env": {"PATCHED": "yes"}}}
    jobs = tmp_path / "jobs"
    plain = run_bench("run", str(tmp_path / "tasks"), "--jobs-dir", str(tmp_path / "plain"))
    done = run_bench("run", str(tmp_path / "tasks"), "--jobs-dir", str(jobs),
                     "--config-override", json.dumps(patch))
    assert plain.returncode == 0 and done.returncode == 0, (plain.stderr, done.stderr)
    [before] = (tmp_path / "plain").rglob("result.json")
    [after] = jobs.rglob("result.json")
    assert json.loads(before.read_text())["rewards"]["reward"] == 0.0
    assert json.loads(after.read_text())["rewards"]["reward"] == 1.0
    recorded = json.loads((after.parent / "config.json").read_text())["config_override"]
    canonical = json.dumps(patch, sort_keys=True, separators=(",", ":")).encode()
    assert recorded == {"keys": ["oracle"], "sha256": "sha256:" + hashlib.sha256(canonical).hexdigest(),
                        "patch": patch}


@pytest.mark.parametrize("section", ["verifier", "reward"])
def test_a_section_that_decides_the_score_is_refused(tmp_path: Path, section: str) -> None:
    make_task(tmp_path / "tasks", "needs-env", solve=SOLVE, test=NEEDS_PATCH)
    done = run_bench("run", str(tmp_path / "tasks"), "--dry-run", "--config-override", json.dumps({section: {}}))
    assert done.returncode == 2 and f"cannot patch {section}" in done.stderr and "contracts §7.5" in done.stderr
