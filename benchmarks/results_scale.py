"""Speed and memory of reading a large job: 10,000 trials, 2 MB trajectories on 1% of them.

Measures, each in a fresh process (wall seconds and peak RSS from wait4):
``bench results JOB``, ``bench results JOB --json``, ``bench eval metrics JOB``
and ``bf.load_job(JOB)``, against a baseline run the same way: a bare Python
process that only reads and parses every ``result.json`` (the floor any reader
pays). Budget: each command <= 2 s and <= 300 MB. The ``bf.load_job`` run also
counts files opened under ``trajectory/`` (must be 0: trajectories are read
only when asked for).

    .venv/bin/python benchmarks/results_scale.py [--trials 10000] [--dir /tmp/bf-scale] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.jobgen import TrialSpec, write_job  # noqa: E402

BUDGET_SEC = 2.0
BUDGET_MB = 300.0
TRAJECTORY_BYTES = 2 * 1024 * 1024


def _trajectory(rng: random.Random) -> list[dict]:
    events = [{"type": "user_message", "text": "Solve the task."}]
    size = 0
    while size < TRAJECTORY_BYTES:
        text = "".join(rng.choice("abcdefghij \n") for _ in range(2000))
        events.append({"type": "tool_call", "tool_call_id": f"tc_{len(events)}", "kind": "bash", "title": "run",
                       "status": "completed", "content": [{"type": "text", "text": text}]})
        size += len(text) + 120
    return events


def make_job(root: Path, n_trials: int, seed: int = 0) -> Path:
    """A job of ``n_trials`` trials: 5% of tasks retried once, mixed outcomes, 1% with 2 MB trajectories."""
    rng = random.Random(seed)
    big = _trajectory(rng)
    specs: list[TrialSpec] = []
    n_retried = n_trials // 20
    tasks = [f"task-{i:05d}" for i in range(n_trials - n_retried)]
    for index in range(n_trials):
        task = tasks[index] if index < len(tasks) else tasks[index - len(tasks)]
        roll = rng.random()
        spec = TrialSpec(task, reward=1.0 if roll < 0.6 else 0.0, pad_bytes=1500,
                         suffix=f"{index:08x}")
        if roll > 0.95:
            spec.reward, spec.error, spec.error_category = None, "Agent idle for 600s with no new tool call", \
                "idle_timeout"
        elif roll > 0.92:
            spec.reward, spec.verifier_error = None, "verifier crashed: exit 2"
        if index % 100 == 0:
            spec.acp_events = big
        specs.append(spec)
    return write_job(root, "scale-job", specs, summary={"agent": "claude-agent-acp", "model": "claude-haiku-4-5"})


BASELINE = """
import json, os, sys
job = sys.argv[1]
for name in os.listdir(job):
    path = os.path.join(job, name, "result.json")
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            json.loads(handle.read())
"""

LOAD_JOB = """
import sys
opened = []
sys.addaudithook(lambda event, args: opened.append(args[0]) if event == "open" and "/trajectory/" in str(args[0]) else None)
import benchflow as bf
doc = bf.load_job(sys.argv[1])
print(len(doc.trials), len(opened))
"""


def measure(argv: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user + system), peak RSS (MB) and stdout of one fresh process."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "200"})
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise SystemExit(f"{' '.join(argv)} exited {code}")
        out.seek(0)
        text = out.read().decode()
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--dir", type=Path, default=None, help="reuse/create the job here (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated job")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (medians and the best wall time are reported)")
    args = parser.parse_args()
    base = args.dir or Path(tempfile.mkdtemp(prefix="bf-scale-"))
    job = base / "scale-job"
    if not job.is_dir():
        start = time.perf_counter()
        make_job(base, args.trials)
        print(f"generated {args.trials} trials in {time.perf_counter() - start:.1f}s at {job}")
    py = sys.executable
    bench = [py, "-m", "benchflow.cli"]
    cases = [
        ("baseline: parse every result.json", [py, "-c", BASELINE, str(job)]),
        ("bench results JOB", [*bench, "results", str(job)]),
        ("bench results JOB --json", [*bench, "results", str(job), "--json"]),
        ("bench eval metrics JOB", [*bench, "eval", "metrics", str(job)]),
        ("bf.load_job(JOB)", [py, "-c", LOAD_JOB, str(job)]),
    ]
    runs: dict[str, list[tuple[float, float, float, str]]] = {label: [] for label, _ in cases}
    for _ in range(args.repeat):  # round-robin, so every command sees the same machine load
        for label, argv in cases:
            runs[label].append(measure(argv))
    floor_wall = statistics.median(r[0] for r in runs[cases[0][0]])
    floor_cpu = statistics.median(r[1] for r in runs[cases[0][0]])
    load = os.getloadavg()[0]
    print(f"\n{args.repeat} runs each, round-robin; load average {load:.1f} on {os.cpu_count()} CPUs "
          "(wall time on a shared machine is noisy: CPU time is the steadier figure)")
    print(f"{'command':34} {'wall med':>8} {'wall min':>8} {'cpu med':>8} {'x base':>7} {'peak MB':>8}  "
          f"budget (<= {BUDGET_SEC:g} s, <= {BUDGET_MB:g} MB)")
    for label, _ in cases:
        wall = statistics.median(r[0] for r in runs[label])
        cpu = statistics.median(r[1] for r in runs[label])
        rss = max(r[2] for r in runs[label])
        best = min(r[0] for r in runs[label])
        verdict = "-" if label == cases[0][0] else ("ok" if best <= BUDGET_SEC and rss <= BUDGET_MB else "OVER")
        print(f"{label:34} {wall:8.2f} {best:8.2f} {cpu:8.2f} {cpu / floor_cpu:7.2f} {rss:8.1f}  {verdict}")
    print(f"(baseline wall median {floor_wall:.2f} s)")
    trials, opened = runs[cases[-1][0]][-1][3].split()
    print(f"\nbf.load_job read {trials} trials (best attempt per task) and opened {opened} trajectory files")
    if not args.keep and args.dir is None:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
