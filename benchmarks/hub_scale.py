"""Hub pages at scale: a dataset version of 10,000 tasks and a leaderboard of 1,000 pushed runs.

Fills a hub database (SQLite by default; ``--db postgresql://…`` for PostgreSQL)
through the hub's own store functions, starts the real server (``bench hub
serve --port 0``) and times HTTP GETs from a client in this process: the
dataset page (HTML) at its first, middle and last task page and leaderboard
page, the JSON task and leaderboard pages, and the whole ``registry.json``
(reported, not budgeted: it is one document, not a page). Budget: every page
<= 200 ms (median of ``--repeat`` requests).

    .venv/bin/python benchmarks/hub_scale.py [--tasks 10000] [--runs 1000] [--repeat 15] [--db URL]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

BUDGET_MS = 200.0


def fill(db: str, n_tasks: int, n_runs: int) -> None:
    from sqlalchemy import insert

    from benchflow.hub import models, store
    from benchflow.hub.database import engine_for
    from benchflow.hub.migrations import upgrade
    from benchflow.hub.names import DatasetRef
    from benchflow.hub.tokens import create_token

    engine = engine_for(db)
    upgrade(engine)
    create_token(engine, "bench")
    tasks = [{"name": f"task-{i:05d}", "digest": f"sha256:{i:064x}", "archive_key": f"sha256:{i:064x}",
              "archive_size": 1000} for i in range(n_tasks)]
    dataset_id = store.publish(engine, DatasetRef("scale", "big", "1.0"), {"description": "scale test"}, 1, tasks)
    rng = random.Random(7)
    with engine.begin() as conn:
        run_rows = [{"id": i + 1, "dataset_id": dataset_id, "label": f"run {i}", "job_name": f"job-{i}",
                     "pusher_id": 1, "pushed_at": "2026-01-01T00:00:00Z", "bundle_key": f"sha256:{i:064x}",
                     "n_trials": n_tasks} for i in range(n_runs)]
        conn.execute(insert(models.runs), run_rows)
        entries = []
        for i in range(n_runs):
            score = rng.random()
            entries.append({"run_id": i + 1, "dataset_id": dataset_id, "agent": f"agent-{i % 7}",
                            "model": f"model-{i % 5}", "tasks": n_tasks, "trials": n_tasks, "solve_rate": score,
                            "score": score, "interval_low": max(0.0, score - 0.01),
                            "interval_high": min(1.0, score + 0.01), "total_tokens": rng.randrange(10**9),
                            "cost_usd": rng.random() * 100})
        conn.execute(insert(models.leaderboard), entries)
    engine.dispose()


def serve(db: str, blobs: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "hub", "serve", "--port", "0", "--db", db,
                             "--blobs", str(blobs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            match = re.search(r"http://127\.0\.0\.1:\d+", line)
            if match:
                found.append(match.group(0))
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(30):
        proc.kill()
        raise SystemExit(f"bench hub serve did not start: {proc.stderr.read()}")
    return proc, found[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--db", default=None, help="database URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="hub-scale-"))
    db = args.db or f"sqlite:///{tmp / 'hub.sqlite3'}"
    start = time.perf_counter()
    fill(db, args.tasks, args.runs)
    print(f"filled {args.tasks} tasks and {args.runs} runs in {time.perf_counter() - start:.1f}s ({db.split(':')[0]})")
    proc, url = serve(db, tmp / "blobs")
    last_tasks, last_runs = -(-args.tasks // 100), -(-args.runs // 50)
    page = f"{url}/datasets/scale/big/1.0"
    api = f"{url}/api/datasets/scale/big/1.0"
    cases = [
        ("dataset page (tasks 1, board 1)", page, True),
        (f"dataset page (tasks {last_tasks // 2})", f"{page}?tasks_page={last_tasks // 2}", True),
        (f"dataset page (tasks {last_tasks}, board {last_runs})",
         f"{page}?tasks_page={last_tasks}&runs_page={last_runs}", True),
        ("API tasks page 1 (100)", f"{api}?page=1&per_page=100", True),
        (f"API tasks page {last_tasks}", f"{api}?page={last_tasks}&per_page=100", True),
        ("API leaderboard page 1 (50)", f"{api}/leaderboard?page=1", True),
        (f"API leaderboard page {last_runs}", f"{api}/leaderboard?page={last_runs}", True),
        ("index page", f"{url}/", True),
        (f"registry.json (all {args.tasks} tasks)", f"{url}/api/registry.json", False),
    ]
    failed = False
    try:
        with httpx.Client(timeout=30) as client:
            print(f"\n{args.repeat} requests each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
            print(f"{'page':40} {'med ms':>8} {'min ms':>8} {'max ms':>8} {'KiB':>7}  budget")
            for label, target, budgeted in cases:
                client.get(target).raise_for_status()  # warm
                times, size = [], 0
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    response = client.get(target)
                    times.append((time.perf_counter() - t0) * 1000)
                    response.raise_for_status()
                    size = len(response.content)
                med = statistics.median(times)
                verdict = ("ok" if med <= BUDGET_MS else "OVER") if budgeted else "(not a page)"
                failed |= budgeted and med > BUDGET_MS
                print(f"{label:40} {med:8.1f} {min(times):8.1f} {max(times):8.1f} {size / 1024:7.1f}  {verdict}")
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"\nbudget: every page <= {BUDGET_MS:.0f} ms median: {'met' if not failed else 'NOT met'}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
