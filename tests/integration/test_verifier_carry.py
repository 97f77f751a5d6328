"""The verifier's folder reaches the sandbox whole, whether the fence carries it (small) or it is
uploaded after the fence (over the carry limit): nested folders, executable helpers, big data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.verify.fence import CARRY_MAX_BYTES
from tests.conftest import run_bench
from tests.taskgen import WRITE_HELLO, make_task

# the helper must still be executable, the data whole, and the solution in place
CHECK = ('[ "$(cat /app/hello.txt)" = hello ] && [ "$(wc -c < /verifier/data.bin)" = "$(cat /verifier/size)" ] '
         '&& /verifier/sub/helper.sh && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt')


def _task(root: Path, name: str, size: int) -> None:
    task = make_task(root, name, solve=WRITE_HELLO, test=CHECK)
    (task / "verifier" / "data.bin").write_bytes(b"x" * size)
    (task / "verifier" / "size").write_text(f"{size}\n")
    helper = task / "verifier" / "sub" / "helper.sh"
    helper.parent.mkdir()
    helper.write_text("#!/bin/sh\nexit 0\n")
    helper.chmod(0o755)


@pytest.mark.docker
def test_small_and_large_verifier_folders_both_arrive_whole(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    _task(tasks, "small", 1000)
    _task(tasks, "large", CARRY_MAX_BYTES + 1)
    jobs = tmp_path / "jobs"
    done = run_bench("run", str(tasks), "-s", "docker", "--jobs-dir", str(jobs), "-j", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    rewards = {json.loads(p.read_text())["task_name"]: json.loads(p.read_text())["rewards"]["reward"]
               for p in jobs.glob("*/*/result.json")}
    assert rewards == {"small": 1.0, "large": 1.0}
