"""Scale-out on one machine (issue 20): the same trials in-process and spread over workers, and the
warm daemon's start of a one-task ``bench run`` against a cold start.

(a) N trials (default 64) of a task whose oracle sleeps S s (default 5), one row per mode, same
    machine, same run: ``in-process -j 8`` and ``2 shards x 4`` (``-j 8 --worker-concurrency 4``).
    Target: every mode within 10% of in-process. A mode is one function in ``MODES`` returning the
    ``bench run`` flags (and environment) it adds; add a row by adding a function. The Ray row
    (``2-node Ray x 4``: a local two-node cluster, ``--executor ray``) needs ``benchflow[ray]``.
(b) The start of a one-task ``bench run``: from launching the command to its first progress line
    (plan made, job folder open, the sandbox about to be made) and to the end, cold (in-process)
    and attached to a warm ``bench daemon`` (``BENCHFLOW_DAEMON=auto``), without and with
    ``--prepare 1`` (the sandbox of the next identical call started ahead); median of the repeats,
    each a fresh job. Target: warm start <= 0.3 s.

Needs a Docker engine (scripts/docker-engine.sh). The daemon runs in a private runtime folder.

Rows of (a) are the median of ``--rounds`` rounds, each running every mode once in order, with each
round's ratio to the first mode beside them (one round's ratio swings by more than 10% with the load).

Usage: .venv/bin/python benchmarks/scale_out.py [--trials 64] [--sleep 5] [--rounds 3] [--repeats 5] [--modes a,b]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

PYTHON = str(ROOT / ".venv/bin/python")
TARGET_RATIO = 1.10
TARGET_WARM_START = 0.3


def in_process(_tmp: Path) -> tuple[list[str], dict[str, str]]:
    return ["-j", "8"], {}


def shards_2x4(_tmp: Path) -> tuple[list[str], dict[str, str]]:
    return ["-j", "8", "--worker-concurrency", "4", "--worker-start-stagger-sec", "0"], {}


def ray_2x4(_tmp: Path) -> tuple[list[str], dict[str, str]]:
    """A two-node Ray cluster on this machine (4 CPUs each, no dashboard, started before the clock,
    shut down at exit), as docs/ray.md has a user start one (``ray start --num-cpus 4
    --include-dashboard=false``): ``-j 8 --executor ray``."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4, "include_dashboard": False})
    atexit.register(cluster.shutdown)
    cluster.add_node(num_cpus=4)
    cluster.wait_for_nodes()
    return ["-j", "8", "--executor", "ray"], {"RAY_ADDRESS": cluster.address}


MODES: dict[str, Callable[[Path], tuple[list[str], dict[str, str]]]] = {
    "in-process -j 8": in_process,
    "2 shards x 4": shards_2x4,
    "2-node Ray x 4": ray_2x4,
}
"""Row name -> (extra ``bench run`` flags, extra environment). The first row is the baseline."""


def bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "benchflow.cli", *args], check=False, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})})


def make_tasks(root: Path, n: int, sleep: float) -> Path:
    for i in range(n):
        make_task(root, f"t{i:03d}", solve=f"sleep {sleep}; " + WRITE_HELLO, test=PASS_IF_HELLO)
    return root


def scale_rows(tmp: Path, n: int, sleep: float, modes: list[str], rounds: int) -> list[tuple[str, list[float], int]]:
    """Each mode's walls over ``rounds`` rounds (every round runs every mode once, in order, so a load
    change hits all of them), and the trials the last round passed."""
    tasks = make_tasks(tmp / "tasks", n, sleep)
    bench("run", str(tasks), "-s", "docker", "-n", "1", "--jobs-dir", str(tmp / "warmup"))  # the image, once
    setups = {name: MODES[name](tmp) for name in modes}  # a cluster is started once, before the clock
    walls: dict[str, list[float]] = {name: [] for name in modes}
    passed: dict[str, int] = {}
    for r in range(rounds):
        for name, (flags, env) in setups.items():
            jobs = tmp / f"jobs-{r}-{modes.index(name)}"
            t = time.perf_counter()
            done = bench("run", str(tasks), "-s", "docker", "--jobs-dir", str(jobs), *flags, env=env)
            walls[name].append(time.perf_counter() - t)
            job = next(p for p in jobs.iterdir() if p.is_dir())
            passed[name] = json.loads((job / "summary.json").read_text())["passed"]
            if done.returncode != 0:
                print(f"{name}: exit {done.returncode}\n{done.stderr[-2000:]}", file=sys.stderr)
    return [(name, walls[name], passed[name]) for name in modes]


def one_start(task_dir: Path, jobs: Path, env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the first progress line, seconds to the end) of one ``bench run`` of one task."""
    t = time.perf_counter()
    proc = subprocess.Popen([PYTHON, "-m", "benchflow.cli", "run", str(task_dir), "-s", "docker", "--fresh",
                             "--jobs-dir", str(jobs)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "NO_COLOR": "1", **env})
    assert proc.stderr is not None
    first = None
    for line in proc.stderr:
        if first is None and line.startswith("Job "):
            first = time.perf_counter() - t
    proc.wait()
    end = time.perf_counter() - t
    return (first if first is not None else float("nan")), end


def _median_row(name: str, runs: list[tuple[float, float]]) -> tuple[str, float, float]:
    return name, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def start_daemon(*flags: str) -> dict[str, str] | None:
    """A daemon in a private runtime folder; the environment that attaches to it (None: it did not start)."""
    env = {"XDG_RUNTIME_DIR": tempfile.mkdtemp(prefix="benchflow-bench-rt-")}
    started = bench("daemon", "start", *flags, env=env)
    if started.returncode != 0:
        print(f"bench daemon start failed: {started.stdout}{started.stderr}", file=sys.stderr)
        return None
    return env


def wait_prepared(env: dict[str, str]) -> None:
    """Until the daemon's sandbox for the next identical call is up (it starts in the background)."""
    deadline = time.monotonic() + 60
    while "0 prepared" in bench("daemon", "status", env=env).stdout and time.monotonic() < deadline:
        time.sleep(0.1)


def daemon_rows(tmp: Path, repeats: int) -> list[tuple[str, float, float]]:
    """Cold, warm and warm with ``--prepare 1``, interleaved in every repeat so load changes hit all three."""
    task = make_tasks(tmp / "one", 1, 0) / "t000"
    warm, prepared = start_daemon(), start_daemon("--prepare", "1")
    modes = {"cold (in-process)": ({}, None)}  # name -> (environment of the run, daemon to wait for)
    if warm is not None:
        modes["warm (BENCHFLOW_DAEMON=auto)"] = ({**warm, "BENCHFLOW_DAEMON": "auto"}, None)
    if prepared is not None:
        modes["warm, start --prepare 1"] = ({**prepared, "BENCHFLOW_DAEMON": "auto"}, prepared)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in modes}
    try:
        for env, _ in modes.values():  # warm-up: bytecode, image, the first prepared sandbox
            one_start(task, tmp / "warmup", env)
        for _ in range(repeats):
            for name, (env, daemon) in modes.items():
                if daemon is not None:
                    wait_prepared(daemon)
                runs[name].append(one_start(task, tmp / "runs", env))
    finally:
        for daemon in (warm, prepared):
            if daemon is not None:
                bench("daemon", "stop", env=daemon)
                shutil.rmtree(daemon["XDG_RUNTIME_DIR"], ignore_errors=True)
    return [_median_row(name, rows) for name, rows in runs.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--sleep", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (a): each runs every mode once")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated rows of MODES")
    parser.add_argument("--skip-scale", action="store_true", help="only the daemon rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchflow-scale-out-") as tmp:
        if not args.skip_scale:
            rows = scale_rows(Path(tmp), args.trials, args.sleep, args.modes.split(","), args.rounds)
            base = rows[0][1]
            print(f"(a) {args.trials} trials, oracle sleeps {args.sleep:g}s "
                  f"(ideal at 8 running: {args.trials * args.sleep / 8:.0f}s), median of {args.rounds} rounds")
            print(f"{'mode':32} {'wall s':>8} {'ratio':>7} {'passed':>7}  target <= {TARGET_RATIO:.2f}  per round")
            for name, walls, passed in rows:
                ratio = statistics.median(walls) / statistics.median(base)
                each = " ".join(f"{w / b:.2f}" for w, b in zip(walls, base, strict=True))
                print(f"{name:32} {statistics.median(walls):8.1f} {ratio:7.2f} {passed:>7}  "
                      f"{'ok' if ratio <= TARGET_RATIO else 'MISS':16}  {each}")
        print(f"\n(b) one-task bench run, median of {args.repeats}")
        print(f"{'start':32} {'first line s':>12} {'end s':>8}  target first line <= {TARGET_WARM_START:g}s warm")
        for name, first, end in daemon_rows(Path(tmp), args.repeats):
            print(f"{name:32} {first:12.2f} {end:8.2f}")


if __name__ == "__main__":
    main()
