"""``bench train stream``: how soon a finished rollout goes out after its ``result.json`` lands (target ≤ 1 s).

A job folder is locked by this process (as ``bench run`` locks it) and N
trials are written one at a time, each trial's ``result.json`` last
(atomically, as the run engine writes it), at random moments. The stream runs
in a thread of this process and its output is timestamped line by line; the
latency of a rollout is the time from its ``result.json`` rename to its line.
Two cases in the same run: the default (file-system notification, polling every
``--poll-interval`` 1 s as the fallback) and polling alone (the baseline: what
the stream did before notification).

    .venv/bin/python benchmarks/train_stream_latency.py [--rollouts 20]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchflow.jobs.job import lock_job
from benchflow.jobs.layout import JobPaths
from benchflow.train.stream import StreamOptions, stream
from tests.fixtures.jobgen import write_trial
from tests.fixtures.train_jobs import rollout

TARGET_SEC = 1.0


class Stamped(io.TextIOBase):
    """A text sink that records when each line arrived."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def write(self, text: str) -> int:
        now = time.monotonic()
        self.stamps += [now] * text.count("\n")
        return len(text)


def case(root: Path, rollouts: int, polling_only: bool) -> list[float]:
    job = JobPaths(root / ("polling" if polling_only else "notify"))
    fd = lock_job(job)
    out = Stamped()
    opts = StreamOptions(job_dir=job.root, poll_interval=1.0, timeout=rollouts * 2 + 30)
    thread = threading.Thread(target=stream, args=(opts, out, io.StringIO(), time.sleep if polling_only else None))
    thread.start()
    rng = random.Random(7)
    landed = []
    for n in range(rollouts):
        time.sleep(rng.uniform(0.05, 0.6))  # trials finish at random moments, not in step with any poll
        write_trial(job.root, rollout(f"task-{n}", 1.0, suffix=f"{n:08x}"))
        landed.append(time.monotonic())
        deadline = time.monotonic() + 10
        while len(out.stamps) <= n and time.monotonic() < deadline:
            time.sleep(0.005)
    job.summary.write_text("{}")
    os.close(fd)
    job.lock.unlink()
    thread.join()
    return [emitted - wrote for wrote, emitted in zip(landed, out.stamps, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [("polling only (baseline)", case(Path(tmp), args.rollouts, True)),
                ("notification (default)", case(Path(tmp), args.rollouts, False))]
    base = statistics.median(rows[0][1])
    print(f"{args.rollouts} rollouts; latency = result.json rename → its stream line; target ≤ {TARGET_SEC:g} s")
    print(f"{'case':<26} {'median s':>9} {'max s':>7} {'× baseline':>11} {'target met':>11}")
    for name, lat in rows:
        print(f"{name:<26} {statistics.median(lat):>9.3f} {max(lat):>7.3f} "
              f"{statistics.median(lat) / base:>11.2f} {'yes' if max(lat) <= TARGET_SEC else 'no':>11}")


if __name__ == "__main__":
    main()
