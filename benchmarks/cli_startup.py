"""How fast `bench` starts, against a bare Python start-up measured in the same run.

    .venv/bin/python benchmarks/cli_startup.py [--runs 15]

Prints the median wall time of `bench --version`, `bench --help` and
`bench tasks --help` next to `python -c pass`, with the ratio and the target
(--version <= 0.15 s, --help <= 0.4 s on the development machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGETS = {"bench --version": 0.15, "bench --help": 0.4}


def median_seconds(argv: list[str], runs: int) -> float:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="100")
    samples = []
    subprocess.run(argv, capture_output=True, env=env, check=False)  # warm the page cache
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, env=env, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    python = sys.executable
    bench = str(Path(python).with_name("bench"))
    rows = [
        ("python -c pass", [python, "-c", "pass"]),
        ("bench --version", [bench, "--version"]),
        ("bench --help", [bench, "--help"]),
        ("bench tasks --help", [bench, "tasks", "--help"]),
    ]
    times = {label: median_seconds(argv, args.runs) for label, argv in rows}
    base = times["python -c pass"]
    print(f"{'command':<22}{'median s':>10}{'x python':>10}{'target s':>10}  verdict")
    for label, _ in rows:
        target = TARGETS.get(label)
        verdict = "" if target is None else ("ok" if times[label] <= target else "SLOW")
        print(f"{label:<22}{times[label]:>10.3f}{times[label] / base:>10.1f}"
              f"{(f'{target:.2f}' if target else '-'):>10}  {verdict}")
    print(f"({args.runs} runs each, median; {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
