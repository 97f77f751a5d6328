"""Overhead of ``bench run`` against the raw floor, same machine, same run (issue 21's table).

(a) floor: the trial's steps by hand with the docker CLI — run a container,
    upload the instruction, run the solve script, run the verifier, copy the
    reward out, remove the container (image cached);
(b) ``bench run`` of 1 task, whole process (image cached), against the floor;
(c) 8 trivial tasks at -j 4 (total wall);
(d) 16 trivial tasks at -j 16: CPU seconds of our process per trial and its peak RSS;
(e) imports: ``import benchflow.jobs.api`` (-X importtime) and, from the phase profile,
    every import before the first container starts; beside it, what the libraries among them
    cost alone: the modules not of benchflow that the run's main thread had loaded by then
    (Pydantic, Typer, asyncio, http.client, ...), imported in the same order by a fresh
    interpreter after each profile run, timed from the first to the last (the floor our own
    modules add to);
(f) the profile of one ``bench run`` (:mod:`run_phases`): wall and CPU per phase, median of
    the repeats, biggest first, and the engine calls;
(g) with --sleep: 16 tasks whose oracle sleeps 5 s at -j 1 and -j 4 (target speed-up >= 3.5x).

``--baseline-src DIR`` runs every ``bench`` row a second time with ``DIR`` (a ``src`` folder of
another checkout, e.g. the tree before a change) first on ``PYTHONPATH``, interleaved with the
current one, and prints both columns: before and after in the same run, on the same load.

Bytecode is cached in a private ``PYTHONPYCACHEPREFIX`` (as an installed package has it), even
when the caller's environment sets ``PYTHONDONTWRITEBYTECODE``; the first run of each series
is a warm-up; each sample (the floor's too) starts once the engine has removed the containers of
the one before (a run does not wait for their removal). Each tree has its own ``BENCHFLOW_CACHE``:
what a run keeps for the next (pydantic's plugin scan, keyed on ``sys.path``, which
``--baseline-src`` changes; parsed front matter) is then what a user's next run finds, instead of
the other tree's entry. Needs a Docker engine (scripts/docker-engine.sh).

Usage: .venv/bin/python benchmarks/run_overhead.py [--repeats 5] [--baseline-src DIR] [--sleep]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.taskgen import PASS_IF_HELLO, WRITE_HELLO, make_task

IMAGE = "debian:bookworm-slim"
PYTHON = str(ROOT / ".venv/bin/python")
TARGETS = {"one": 1.5, "eight": 6.0, "cpu": 0.1, "rss": 80.0, "imports": 0.15}


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def settle(deadline: float = 120.0) -> None:
    """Until the engine holds no container of ours (or ``deadline`` seconds): a run sends its
    containers' removal and exits without waiting for it, so the last sample's removals (16 of them
    after the -j 16 batch) would otherwise compete with the next sample for the two cores."""
    end = time.monotonic() + deadline
    while sh("docker", "ps", "-aq", "--filter", "label=benchflow.owned") and time.monotonic() < end:
        time.sleep(0.1)


def floor_once(tmp: Path) -> float:
    settle()
    t = time.perf_counter()
    cid = sh("docker", "run", "-d", "--network", "none", "--init", IMAGE, "sleep", "infinity")
    sh("docker", "exec", cid, "sh", "-c", "mkdir -p /app /logs/verifier && echo 'Do the task.' > /instruction.md")
    sh("docker", "exec", "-w", "/app", cid, "sh", "-c", WRITE_HELLO)
    sh("docker", "exec", "-w", "/app", cid, "sh", "-c", PASS_IF_HELLO)
    sh("docker", "cp", f"{cid}:/logs/verifier/reward.txt", str(tmp / "reward.txt"))
    sh("docker", "rm", "-f", cid)
    return time.perf_counter() - t


class Tree:
    """One source tree under test: the checkout itself, or a baseline ``src`` folder."""

    def __init__(self, label: str, src: Path | None, pycache: Path) -> None:
        self.label = label
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["PYTHONPYCACHEPREFIX"] = str(pycache / label)
        self.env["BENCHFLOW_CACHE"] = str(pycache.parent / "cache" / label)
        if src is not None:
            self.env["PYTHONPATH"] = os.pathsep.join([str(src), self.env.get("PYTHONPATH", "")]).rstrip(os.pathsep)

    def run(self, argv: list[str]) -> tuple[float, float, float, str]:
        """(wall s, CPU s, peak RSS MiB, stdout) of one child process (its own rusage, by wait4)."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t = time.perf_counter()
            proc = subprocess.Popen(argv, env=self.env, stdout=out, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            if proc.returncode != 0:
                raise SystemExit(f"{self.label}: {' '.join(argv[:5])}... exited {proc.returncode}:\n"
                                 f"{err.read().decode()[-2000:]}")
            return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read().decode()

    def bench(self, tasks: Path, jobs: Path, *extra: str) -> tuple[float, float, float]:
        settle()
        wall, cpu, rss, _ = self.run([PYTHON, "-m", "benchflow.cli", "run", str(tasks), "-s", "docker",
                                      "--jobs-dir", str(jobs), "--fresh", "-q", *extra])
        return wall, cpu, rss

    def profile(self, tasks: Path, jobs: Path) -> dict:
        settle()
        launched = time.monotonic()
        _, _, _, out = self.run([PYTHON, str(ROOT / "benchmarks/run_phases.py"), repr(launched), "--",
                                 "run", str(tasks), "-s", "docker", "--jobs-dir", str(jobs), "--fresh", "-q"])
        found = json.loads(out.strip().splitlines()[-1])
        found["exit"] = time.monotonic() - launched - found["total"]
        return found

    def libraries_time(self, names: list[str]) -> float:
        """Seconds a fresh interpreter takes to import ``names`` in order (those not loaded yet)."""
        settle()
        _, _, _, out = self.run([PYTHON, "-c", IMPORT_ALONE, *names])
        return float(out)

    def import_time(self) -> float:
        """Cumulative seconds of ``import benchflow.jobs.api`` by -X importtime."""
        settle()
        proc = subprocess.run([PYTHON, "-X", "importtime", "-c", "import benchflow.jobs.api"], env=self.env,
                              capture_output=True, text=True, check=True)
        for line in proc.stderr.splitlines():
            if line.rstrip().endswith("| benchflow.jobs.api"):
                return int(line.split("|")[1]) / 1e6
        raise SystemExit("no importtime line for benchflow.jobs.api")


IMPORT_ALONE = """
import gc, importlib, sys, time
gc.set_threshold(100_000, *gc.get_threshold()[1:])  # as while bench starts (benchflow.util.startup_gc)
t = time.perf_counter()
for name in sys.argv[1:]:
    if name not in sys.modules:
        try:
            importlib.import_module(name)
        except Exception:
            pass
print(time.perf_counter() - t)
"""


def interleaved(trees: list[Tree], fn, repeats: int) -> dict[str, list]:
    """``fn(tree)`` for every tree, ``repeats`` rounds (after one warm-up round), interleaved."""
    for tree in trees:
        fn(tree)
    samples: dict[str, list] = {tree.label: [] for tree in trees}
    for _ in range(repeats):
        for tree in trees:
            samples[tree.label].append(fn(tree))
    return samples


def med(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline-src", type=Path, help="a src/ folder to measure beside this checkout")
    parser.add_argument("--sleep", action="store_true", help="add the 16 x sleep-5 series (about 2 minutes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        trees = [Tree("after", None, tmp / "pyc")]
        if args.baseline_src:
            trees.insert(0, Tree("before", args.baseline_src.resolve(), tmp / "pyc"))
        one, eight, sixteen = tmp / "one", tmp / "eight", tmp / "sixteen"
        make_task(one, "hello", solve=WRITE_HELLO, test=PASS_IF_HELLO)
        for i in range(16):
            if i < 8:
                make_task(eight, f"hello-{i:02d}", solve=WRITE_HELLO, test=PASS_IF_HELLO)
            make_task(sixteen, f"hello-{i:02d}", solve=WRITE_HELLO, test=PASS_IF_HELLO)
        floors: list[float] = []

        def single(tree: Tree) -> tuple[float, float, float]:
            floors.append(floor_once(tmp))
            return tree.bench(one, tmp / f"jobs-one-{tree.label}")

        ones = interleaved(trees, single, args.repeats)
        floor = med(floors[len(trees):])
        eights = interleaved(trees, lambda t: t.bench(eight, tmp / f"jobs-8-{t.label}", "-j", "4"),
                             max(1, args.repeats // 2))
        wides = interleaved(trees, lambda t: t.bench(sixteen, tmp / f"jobs-16-{t.label}", "-j", "16"),
                            max(1, args.repeats // 2))
        imports = interleaved(trees, Tree.import_time, args.repeats)
        libraries: list[float] = []

        def profiled(tree: Tree) -> dict:
            found = tree.profile(one, tmp / f"jobs-prof-{tree.label}")
            if tree is trees[-1]:
                libraries.append(tree.libraries_time(found["libraries_before_first_container"]))
            return found

        profiles = interleaved(trees, profiled, args.repeats)
        sleeps = {}
        if args.sleep:
            slow = tmp / "slow"
            for i in range(16):
                make_task(slow, f"sleep-{i:02d}", solve="sleep 5; " + WRITE_HELLO, test=PASS_IF_HELLO)
            for tree in trees:
                s1 = tree.bench(slow, tmp / f"jobs-s1-{tree.label}", "-j", "1")[0]
                s4 = tree.bench(slow, tmp / f"jobs-s4-{tree.label}", "-j", "4")[0]
                sleeps[tree.label] = (s1, s4)

    labels = [t.label for t in trees]
    rows: list[tuple[str, dict[str, float], str]] = [("floor: docker CLI by hand, 1 trial (s)", {"": floor}, "")]

    def add(name: str, values: dict[str, float], target: str) -> None:
        rows.append((name, values, target))

    add("bench run, 1 task, whole process (s)", {k: med([s[0] for s in v]) for k, v in ones.items()}, "")
    add("  ... x floor", {k: med([s[0] for s in v]) / floor for k, v in ones.items()}, f"<= {TARGETS['one']}")
    add("  ... CPU of our process (s)", {k: med([s[1] for s in v]) for k, v in ones.items()}, "")
    add("bench run, 8 tasks -j 4, total (s)", {k: med([s[0] for s in v]) for k, v in eights.items()},
        f"<= {TARGETS['eight']}")
    add("bench run, 16 tasks -j 16, total (s)", {k: med([s[0] for s in v]) for k, v in wides.items()}, "")
    add("  ... CPU of our process per trial (s)", {k: med([s[1] for s in v]) / 16 for k, v in wides.items()},
        f"<= {TARGETS['cpu']}")
    add("  ... peak RSS of our process (MiB)", {k: med([s[2] for s in v]) for k, v in wides.items()},
        f"<= {TARGETS['rss']:g}")
    add("import benchflow.jobs.api, -X importtime (s)", {k: med(v) for k, v in imports.items()}, "")
    add("imports before the first container starts (s)",
        {k: med([p["imports_before_first_container"] or 0.0 for p in v]) for k, v in profiles.items()},
        f"<= {TARGETS['imports']}")
    add("  ... its libraries imported alone (s)", {"": med(libraries[1:])}, "")
    add("imports in the whole process (s)", {k: med([p["imports_total"] for p in v]) for k, v in profiles.items()},
        "")
    for label, (s1, s4) in sleeps.items():
        add(f"16 x sleep-5 tasks -j 1 / -j 4 (s) [{label}]", {label: s1}, f"{s4:.1f} at -j 4")
        add(f"  speed-up -j 4 over -j 1 [{label}]", {label: s1 / s4}, ">= 3.5")

    width = max(len(r[0]) for r in rows)
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; medians of {args.repeats} runs "
          f"({max(1, args.repeats // 2)} for the batches); bytecode cached")
    print(f"{'measurement'.ljust(width)}" + "".join(f"{lab:>10}" for lab in labels) + "    target")
    for name, values, target in rows:
        if "" in values:  # one figure for the whole run (a floor)
            cells = f"{values['']:10.3f}".rjust(10 * len(labels))
        else:
            cells = "".join(f"{values[lab]:10.3f}" if lab in values else " " * 10 for lab in labels)
        print(f"{name.ljust(width)}{cells}    {target}")
    for label in labels:
        print_profile(label, profiles[label])


def print_profile(label: str, runs: list[dict]) -> None:
    """The phase profile of one ``bench run`` (median per phase over the runs), biggest first."""
    phases = {name for p in runs for name in p["phases"]}
    table = []
    for name in phases:
        wall = med([p["phases"].get(name, {}).get("wall", 0.0) for p in runs])
        cpu = med([p["phases"].get(name, {}).get("cpu", 0.0) for p in runs])
        imp = med([p["phases"].get(name, {}).get("imports", 0.0) for p in runs])
        table.append((wall, cpu, imp, name))
    start = med([p["interpreter_start"] for p in runs])
    table.append((start, float("nan"), float("nan"), "interpreter start (before the profiler)"))
    table.append((med([p["exit"] for p in runs]), float("nan"), float("nan"), "interpreter exit (after main)"))
    total = med([p["total"] for p in runs])
    print(f"\nprofile of one bench run [{label}]: {total:.3f} s to the end of main (median of {len(runs)})")
    print(f"{'phase':48}{'wall s':>8}{'cpu s':>8}{'imports':>9}")
    for wall, cpu, imp, name in sorted(table, reverse=True)[:14]:
        print(f"{name:48}{wall:8.3f}{cpu:8.3f}{imp:9.3f}")
    kinds = {k for p in runs for k in p["engine"]}
    calls = sorted(((med([p["engine"].get(k, {}).get("wall", 0.0) for p in runs]),
                     med([p["engine"].get(k, {}).get("calls", 0) for p in runs]), k) for k in kinds), reverse=True)
    print(f"engine calls: {sum(c for _, c, _ in calls):.0f} ({sum(w for w, _, _ in calls):.3f} s): "
          + ", ".join(f"{k} x{c:.0f} {w:.3f}" for w, c, k in calls[:8]))


if __name__ == "__main__":
    main()
