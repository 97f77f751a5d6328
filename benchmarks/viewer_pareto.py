"""Speed of the viewer's Pareto tab on a folder of 100 jobs × 100 trials (10,000 trials).

Starts ``bench view FOLDER --port 0`` and, in headless Chromium, measures the
time from the page's ``load`` event to the Pareto charts being drawn
(``figure.chart[data-chart=drawn]``), against a baseline measured the same way:
the jobs list (``#jobs-table`` rows) of the same folder. Each is measured on a
fresh page, first right after the server started (cold: the server reads the
jobs), then again (warm: the server's cache holds them). Budget: the warm Pareto
tab <= 1 s after the page loads.

    .venv/bin/python benchmarks/viewer_pareto.py [--jobs 100] [--trials 100] [--dir /tmp/bf-pareto] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixtures.jobgen import TrialSpec, write_job

BUDGET_SEC = 1.0


def make_folder(root: Path, jobs: int, trials: int) -> None:
    rng = random.Random(7)
    for j in range(jobs):
        skill = (j % 10 + 1) / 11
        specs = [TrialSpec(task=f"task-{t:03d}", reward=float(rng.random() < skill), agent=f"agent-{j % 10}",
                           model=f"model-{j // 10}", suffix=f"{j:04x}{t:04x}",
                           result={"agent_result": {"cost_usd": rng.random() * (j % 7 + 1) / 100, "total_tokens": 1000},
                                   "timing": {"total": 10 + rng.random() * 50}})
                 for t in range(trials)]
        write_job(root, f"job-{j:03d}", specs, evaluation={"agent": f"agent-{j % 10}", "model": f"model-{j // 10}",
                                                            "dataset_name": "synthetic"})


def measure(page, url: str, ready: str) -> float:
    page.goto("about:blank")
    page.goto(url, wait_until="load")
    loaded = page.evaluate("performance.timing.loadEventEnd")
    page.wait_for_selector(ready, timeout=120_000)
    return (page.evaluate("Date.now()") - loaded) / 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bf-pareto-"))
    if not (folder / "job-000").is_dir():
        started = time.perf_counter()
        make_folder(folder, args.jobs, args.trials)
        print(f"wrote {args.jobs} jobs × {args.trials} trials in {time.perf_counter() - started:.1f} s", flush=True)
    env = {**os.environ, "BENCHFLOW_NO_BROWSER": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.cli", "view", str(folder), "--port", "0"],
                            stdout=subprocess.PIPE, text=True, env=env)
    url = next(m.group(0) for line in proc.stdout if (m := re.search(r"http://127\.0\.0\.1:\d+/", line)))
    from playwright.sync_api import sync_playwright

    rows = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            pareto = "#pareto figure.chart[data-chart=drawn] >> nth=1"
            rows.append(("Pareto tab, cold", measure(page, url + "#/?view=pareto", pareto)))
            rows.append(("jobs list (baseline)", measure(page, url, "#jobs-table tbody tr")))
            rows.append(("Pareto tab, warm", measure(page, url + "#/?view=pareto", pareto)))
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
        if not args.keep and args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    base = rows[1][1]
    print(f"{'measure':<24} {'seconds':>8} {'× baseline':>11}")
    for name, seconds in rows:
        print(f"{name:<24} {seconds:>8.3f} {seconds / base if base else float('nan'):>11.1f}")
    warm = rows[2][1]
    print(f"budget: warm Pareto tab <= {BUDGET_SEC:.1f} s after load: {'ok' if warm <= BUDGET_SEC else 'OVER'}")
    return 0 if warm <= BUDGET_SEC else 1


if __name__ == "__main__":
    sys.exit(main())
