"""Per-trial overhead of ``bench run`` against the raw floor, same machine, same run.

(a) floor: the trial's steps by hand with the docker CLI — run a container,
    upload the instruction, run the solve script, run the verifier, copy the
    reward out, remove the container (image cached);
(b) ``bench run`` of 1 task (whole process, image cached);
(c) 16 trivial tasks at -j 1 and -j 4; and 16 tasks whose oracle sleeps 5 s at
    -j 1 and -j 4 (the speed-up target is >= 3.5x).

Usage: .venv/bin/python benchmarks/run_overhead.py [--repeats 3] [--skip-sleep]
Prints a table of wall times and ratios. Needs a Docker engine (scripts/docker-engine.sh).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task  # noqa: E402

IMAGE = "debian:bookworm-slim"


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def floor_once(tmp: Path) -> float:
    t = time.perf_counter()
    cid = sh("docker", "run", "-d", "--network", "none", "--init", IMAGE, "sleep", "infinity")
    sh("docker", "exec", cid, "sh", "-c", "mkdir -p /app /logs/verifier && echo 'Do the task.' > /instruction.md")
    sh("docker", "exec", "-w", "/app", cid, "sh", "-c", WRITE_HELLO)
    sh("docker", "exec", "-w", "/app", cid, "sh", "-c", PASS_IF_HELLO)
    sh("docker", "cp", f"{cid}:/logs/verifier/reward.txt", str(tmp / "reward.txt"))
    sh("docker", "rm", "-f", cid)
    return time.perf_counter() - t


def bench_run(tasks: Path, jobs: Path, *extra: str) -> float:
    t = time.perf_counter()
    subprocess.run([str(ROOT / ".venv/bin/bench"), "run", str(tasks), "-s", "docker", "--jobs-dir", str(jobs),
                    "--fresh", "-q", *extra], check=True, capture_output=True)
    return time.perf_counter() - t


def median(fn, repeats: int) -> float:
    fn()  # warm-up (builds and caches images)
    return statistics.median(fn() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-sleep", action="store_true", help="skip the 5 s oracle series (saves ~2 min)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        one = tmp / "one"
        make_task(one, "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
        many = tmp / "many"
        for i in range(16):
            make_task(many, f"hello-{i:02d}", solve=WRITE_HELLO, test=PASS_IF_HELLO)
        rows = []
        floor = median(lambda: floor_once(tmp), args.repeats)
        rows.append(("floor: docker CLI by hand, 1 trial", floor, 1.0))
        single = median(lambda: bench_run(one, tmp / "jobs1"), args.repeats)
        rows.append(("bench run, 1 task", single, single / floor))
        j1 = median(lambda: bench_run(many, tmp / "jobs16a", "-j", "1"), 1)
        rows.append(("bench run, 16 tasks -j 1 (per trial)", j1 / 16, j1 / 16 / floor))
        j4 = median(lambda: bench_run(many, tmp / "jobs16b", "-j", "4"), 1)
        rows.append(("bench run, 16 tasks -j 4 (per trial)", j4 / 16, j4 / 16 / floor))
        if not args.skip_sleep:
            slow = tmp / "slow"
            for i in range(16):
                make_task(slow, f"sleep-{i:02d}", solve="sleep 5; " + WRITE_HELLO, test=PASS_IF_HELLO)
            s1 = bench_run(slow, tmp / "jobs-s1", "-j", "1")
            s4 = bench_run(slow, tmp / "jobs-s4", "-j", "4")
            rows.append(("16 × sleep-5 tasks, -j 1 (total)", s1, s1 / floor))
            rows.append(("16 × sleep-5 tasks, -j 4 (total)", s4, s4 / floor))
            rows.append(("  speed-up -j 4 over -j 1 (target >= 3.5x)", s1 / s4, float("nan")))
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement'.ljust(width)}  {'seconds':>8}  {'x floor':>8}")
    for name, seconds, ratio in rows:
        print(f"{name.ljust(width)}  {seconds:8.2f}  {ratio:8.2f}")


if __name__ == "__main__":
    main()
