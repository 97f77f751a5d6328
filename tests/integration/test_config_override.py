"""``--config-override`` end to end: a patch of any task config section reaches the trial, and
config.json records it (keys, content hash, patch)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import run_bench
from tests.taskgen import WRITE_HELLO, make_task

pytestmark = pytest.mark.docker

NEEDS_PATCH = 'if [ "$PATCHED" = yes ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'


def test_a_verifier_patch_reaches_the_verifier_and_is_recorded(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks", "needs-env", solve=WRITE_HELLO, test=NEEDS_PATCH)
    patch = {"verifier": {"env": {"PATCHED": "yes"}}}
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
    assert recorded == {"keys": ["verifier"], "sha256": "sha256:" + hashlib.sha256(canonical).hexdigest(),
                        "patch": patch}
    [card] = jobs.rglob("run-card.json")
    assert any("--config-override patches verifier" in w for w in json.loads(card.read_text())["warnings"])
