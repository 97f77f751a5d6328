"""What ``bench run -d name@version`` with a warm cache adds to a run's start, against ``--tasks-dir``.

The same N fixture tasks are committed to a local git repository, pinned by a
registry file, fetched once into a private cache (the warm-up), and then planned
both ways with ``bench run --dry-run`` (the start of a run: tasks loaded and
digested, the sandbox chosen, each task fitted; nothing started). The dataset
run also reads the registry, finds every task in the cache and matches each
digest against the registry's. Runs are interleaved; medians are reported, with
the in-process time of the warm resolution alone (``resolve_dataset``), which a
loaded machine's noise does not blur.

    .venv/bin/python benchmarks/dataset_start.py [--tasks 10,50] [--repeats 5]

Target: the dataset run adds at most 0.3 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.registry_repos import entry, task_repo, write_registry

TARGET_SEC = 0.3


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "benchflow.cli", *argv], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if '"tasks"' not in done.stdout:
        raise SystemExit(f"bench {' '.join(argv)} printed no plan:\n{done.stderr[-1500:]}")
    return elapsed


def resolve_only(registry: Path, cache: Path, repeats: int) -> float:
    from benchflow.datasets import resolve_dataset

    os.environ["BENCHFLOW_CACHE"] = str(cache)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        resolve_dataset("bench-set@1", registry=str(registry))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(n: int, repeats: int, tmp: Path) -> tuple[float, float, float]:
    names = [f"task-{i:03d}" for i in range(n)]
    repo, sha = task_repo(tmp / f"repos-{n}", "bench-set", names)
    registry = write_registry(tmp / f"registry-{n}.json", [entry(repo, sha, "bench-set", "1", names)])
    env = {**os.environ, "BENCHFLOW_CACHE": str(tmp / f"cache-{n}"), "NO_COLOR": "1"}
    common = ["--dry-run", "--sandbox", "docker"]
    local = ["run", "--tasks-dir", str(repo / "tasks"), *common]
    dataset = ["run", "-d", "bench-set@1", "--registry", str(registry), *common]
    timed(dataset, env)  # warm-up: the fetch fills the cache
    timed(local, env)
    plain, fetched = [], []
    for _ in range(repeats):
        plain.append(timed(local, env))
        fetched.append(timed(dataset, env))
    return statistics.median(plain), statistics.median(fetched), resolve_only(registry, tmp / f"cache-{n}", repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="10,50", help="comma-separated task counts")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    counts = [int(x) for x in args.tasks.split(",")]
    with tempfile.TemporaryDirectory(prefix="bf-dataset-start-") as tmp:
        rows = [(n, *measure(n, args.repeats, Path(tmp))) for n in counts]
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; medians of {args.repeats} interleaved "
          "bench run --dry-run starts (warm dataset cache)")
    print(f"{'tasks':>6} {'--tasks-dir':>12} {'-d (warm)':>10} {'added':>8} {'ratio':>7} {'resolve':>9}   target")
    for n, plain, fetched, resolve in rows:
        added = fetched - plain
        verdict = "ok" if added <= TARGET_SEC else "OVER"
        print(f"{n:>6} {plain:>11.3f}s {fetched:>9.3f}s {added:>+7.3f}s {fetched / plain:>6.2f}x {resolve * 1000:>7.1f}ms   "
              f"added <= {TARGET_SEC} s: {verdict}")


if __name__ == "__main__":
    main()
