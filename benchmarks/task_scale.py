"""Throughput of `bench tasks check` and `bench tasks digest` over 1,000 generated tasks.

    .venv/bin/python benchmarks/task_scale.py [--tasks 1000]

Generates native task.md tasks in a temporary folder, then times the library
calls and the CLI (one process for the whole folder) and prints tasks/s. A
baseline of reading every file once (`cat`-like) is measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASK_MD = """---
schema_version: '1.3'
metadata: {{difficulty: easy, tags: [generated, n{n}]}}
agent: {{timeout_sec: 300.0}}
verifier: {{timeout_sec: 60.0}}
sandbox: {{network_mode: no-network, cpus: 1, memory_mb: 1024}}
---

## prompt

Write the number {n} into `/app/answer.txt`.
"""


def generate(root: Path, count: int) -> None:
    for n in range(count):
        task = root / f"task-{n:05d}"
        for sub in ("environment", "oracle", "verifier"):
            (task / sub).mkdir(parents=True)
        (task / "task.md").write_text(TASK_MD.format(n=n))
        (task / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
        (task / "oracle" / "solve.sh").write_text(f"#!/bin/sh\necho {n} > /app/answer.txt\n")
        (task / "verifier" / "test.sh").write_text(
            f'#!/bin/sh\n[ "$(cat /app/answer.txt)" = "{n}" ] && echo 1 > /logs/verifier/reward.txt '
            "|| echo 0 > /logs/verifier/reward.txt\n")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def read_all(root: Path) -> None:
    for dirpath, _, files in os.walk(root):
        for name in files:
            Path(dirpath, name).read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    args = parser.parse_args()
    from benchflow.tasks.batch import check_tasks, digest_tasks

    bench = str(Path(sys.executable).with_name("bench"))
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = Path(tmp)
        generate(root, args.tasks)
        rows = {
            "read every file (baseline)": timed(lambda: read_all(root)),
            "library check (structural)": timed(lambda: check_tasks(root)),
            "library digest": timed(lambda: digest_tasks(root)),
            "bench tasks check": timed(lambda: subprocess.run([bench, "tasks", "check", str(root)],
                                                              capture_output=True, check=True)),
            "bench tasks digest": timed(lambda: subprocess.run([bench, "tasks", "digest", str(root)],
                                                               capture_output=True, check=True)),
        }
    base = rows["read every file (baseline)"]
    print(f"{'operation':<30}{'seconds':>9}{'tasks/s':>10}{'x baseline':>12}")
    for label, seconds in rows.items():
        print(f"{label:<30}{seconds:>9.2f}{args.tasks / seconds:>10.0f}{seconds / base:>12.1f}")
    print(f"({args.tasks} generated tasks, 4 files each; {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
