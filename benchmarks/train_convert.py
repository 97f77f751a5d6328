"""``bench train convert`` at scale: 10,000 rollouts of 20 model calls each (target ≤ 20 s, ≤ 500 MB peak).

A synthetic jobs folder is written once (``--keep`` keeps it): one job of N
trials over 100 tasks, each with the records of tests/fixtures/jobgen.py and an
``llm_trajectory.jsonl`` of 20 gateway-shaped Chat Completions calls (the
conversation re-sent in full each call, tool calls and tool results, as
tests/fixtures/train_jobs.py makes them). Each case runs ``bench train
convert`` as a separate process (its wall time and peak RSS measured); the
baseline, in the same process, reads every ``result.json`` and
``llm_trajectory.jsonl`` byte for byte — the I/O the conversion cannot avoid.

    .venv/bin/python benchmarks/train_convert.py [--rollouts 10000] [--calls 20] [--dir PATH] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchflow.jobs.layout import JobPaths, trial_name  # noqa: E402
from tests.fixtures.jobgen import TrialSpec, config_json, result_json  # noqa: E402
from tests.fixtures.train_jobs import conversation  # noqa: E402

TASKS = 100


def generate(root: Path, rollouts: int, calls: int) -> Path:
    """The jobs folder (reused when it already holds ``rollouts`` trials)."""
    job = JobPaths(root / "job")
    if job.root.is_dir() and len(job.trials()) == rollouts:
        return root
    shutil.rmtree(root, ignore_errors=True)
    lines = {t: "".join(json.dumps(e) + "\n" for e in conversation(f"bench{t:03d}", calls, text_bytes=120))
             for t in range(TASKS)}
    for n in range(rollouts):
        task = f"bench{n % TASKS:03d}"
        spec = TrialSpec(task=task, reward=float(n % 3 == 0), model="gpt-4o-mini", agent="fake-acp")
        trial = job.trial(trial_name(task, f"{n:08x}"))
        trial.trajectory_dir.mkdir(parents=True)
        trial.config.write_text(json.dumps(config_json(spec)))
        trial.result.write_text(json.dumps(result_json(spec, trial.name)))
        trial.llm_trajectory.write_text(lines[n % TASKS])
    return root


def baseline(root: Path) -> float:
    started = time.perf_counter()
    for trial in JobPaths(root / "job").trials():
        trial.result.read_bytes()
        trial.llm_trajectory.read_bytes()
    return time.perf_counter() - started


def run_case(root: Path, out: Path, *flags: str) -> tuple[float, float, dict]:
    """(seconds, peak RSS in MB, manifest) of one ``bench train convert`` process."""
    manifest = out.with_suffix(".manifest.json")
    code = ("import resource, sys, time; from benchflow.cli.main import run; t = time.perf_counter(); "
            "c = run(sys.argv[1:]); print(time.perf_counter() - t, "
            "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr); sys.exit(c)")
    done = subprocess.run([sys.executable, "-c", code, "train", "convert", str(root), "-o", str(out),
                           "--manifest", str(manifest), *flags], capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(done.stderr)
    seconds, peak = (float(v) for v in done.stderr.split()[-2:])
    return seconds, peak, json.loads(manifest.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="bf-train-bench-"))
    started = time.perf_counter()
    generate(root, args.rollouts, args.calls)
    size = sum(p.stat().st_size for p in (root / "job").rglob("llm_trajectory.jsonl"))
    print(f"{args.rollouts} rollouts x {args.calls} calls, {size / 2**20:.0f} MB of llm_trajectory.jsonl "
          f"(ready in {time.perf_counter() - started:.1f} s); load {os.getloadavg()[0]:.1f}")
    base = baseline(root)
    cases = [("prime-sft", ()), ("prime-sft + grpo", ("--group-advantage", "grpo")),
             ("trl-sft", ("--format", "trl-sft")), ("verl-sft (parquet)", ("--format", "verl-sft"))]
    print(f"{'case':<22} {'seconds':>8} {'peak MB':>8} {'rows':>7} {'vs read-only':>13}")
    print(f"{'read every file':<22} {base:>8.2f} {'':>8} {'':>7} {1.0:>12.1f}x")
    with tempfile.TemporaryDirectory() as out_dir:
        for name, flags in cases:
            suffix = ".parquet" if "verl" in name else ".jsonl"
            seconds, peak, manifest = run_case(root, Path(out_dir) / f"out{suffix}", *flags)
            print(f"{name:<22} {seconds:>8.2f} {peak:>8.0f} {manifest['rows_written']:>7} {seconds / base:>12.1f}x")
    print("targets: 10,000 rollouts x 20 calls <= 20 s and <= 500 MB peak (prime-sft)")
    if not args.keep and args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
