"""One fork of 4 children vs 4 trials from scratch, and snapshot + restore of a 200 MB workspace.

Both sides run the oracle on the same task, ``tests/fixtures/tasks/branch-setup``,
on the same sandbox backend, in this process, one after another:

    fork      bench branch: one sandbox, its setup, one snapshot, 4 children (in turns)
    fresh     4 plain trials (bf.run, concurrency 1): build check, start, upload, setup, agent, verifier each

The fixture is what a fork saves a user: its ``sandbox.setup_commands`` stand for
a task's setup (a dependency install, a dataset unpacked: 20 MB in 400 files
written, no waiting for a download). The fork runs the setup once and each child
restores the snapshot that holds it; each fresh trial runs it again. The agent and
verifier work per child is the same trivial work on both sides (the oracle writes
one file the verifier reads). ``--task`` measures another task (e.g. the
setup-less ``tests/fixtures/tasks/branch-prompts``, where the fork can only save
the container start and the upload).

The fork's children run their agents one at a time, in order; on a backend that
starts sandboxes from a snapshot, a child's verifier and teardown overlap the next
child's agent (``benchflow.branch.turns``): the first child runs in the trial's
sandbox, the others in sandboxes started from the snapshot, lent to them in order
as they come up. The fresh trials run at concurrency 1,
as the issue's baseline: four trials one after another. Under the table, where the
last fork's seconds went, read from its records (the parent's sandbox start and
setup, the children from the first start to the last end, the rest: snapshot,
teardown, records).

Target: fork ≤ 0.6× fresh. On docker, the same run also times the engine's part alone, by hand
with the docker CLI (``engine_floor``): the containers each side asks for and a write and a read in
each, without benchflow: 4 containers one after another, against one container, its commit and 3
containers started from the commit all at once (more at once than the fork's children). On a
setup-less task this part is all a fork can save (the agent and verifier work is the same on both
sides), so that ratio tells how far the engine lets a fork go on this machine. Then, on the same backend, the seconds for snapshot +
restore of a sandbox whose workspace (the task's workdir, owned by the sandbox
user as in a trial) holds 200 MB of new files: median and worst of ``--repeats``,
each in a new sandbox (target ≤ 2 s on docker); and the same once more on the
restored sandbox after a small change (a nested fork's or a later checkpoint's cost:
only the change should be copied).

    .venv/bin/python benchmarks/branch_overhead.py [--sandbox docker] [--repeats 3] [--task DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASK = ROOT / "tests" / "fixtures" / "tasks" / "branch-setup"
PROMPTS = ["write done", "write nope", "append !", "write done"]


def fork(sandbox: str, jobs: Path, task: Path) -> float:
    from benchflow.branch import BranchSpec, ChildSpec, run_branch

    spec = BranchSpec(tasks_dir=str(task), agent="oracle", sandbox=sandbox, jobs_dir=str(jobs), parent_mode="discard",
                      children=[ChildSpec(label=f"c{i}", prompt=p) for i, p in enumerate(PROMPTS)])
    t = time.monotonic()
    assert run_branch(spec).exit_code == 0
    return time.monotonic() - t


def fresh(sandbox: str, jobs: Path, task: Path) -> float:
    from benchflow.jobs.api import run
    from benchflow.jobs.spec import RunSpec

    t = time.monotonic()
    for i in range(len(PROMPTS)):
        spec = RunSpec(targets=[str(task)], agent="oracle", sandbox=sandbox, jobs_dir=str(jobs / str(i)),
                       concurrency=1, fresh=True)
        run(spec)
    return time.monotonic() - t


KEEP = ["sh", "-c", "while sleep 1000; do :; done"]


def engine_floor() -> tuple[float, float]:
    """Seconds of the engine's part of (4 fresh trials, one fork of 4) by hand with the docker CLI."""
    from concurrent.futures import ThreadPoolExecutor

    from run_overhead import IMAGE, sh  # the run path's floor by hand: the same CLI calls, the same image

    def child(image: str, box: str | None = None) -> None:
        box = box or sh("docker", "run", "-d", "--init", "--network", "none", image, *KEEP)
        sh("docker", "exec", box, "sh", "-c", "echo done > /tmp/answer")
        sh("docker", "exec", box, "cat", "/tmp/answer")
        sh("docker", "rm", "-f", box)

    t = time.monotonic()
    for _ in PROMPTS:
        child(IMAGE)
    fresh_s, t = time.monotonic() - t, time.monotonic()
    parent = sh("docker", "run", "-d", "--init", "--network", "none", IMAGE, *KEEP)
    snap = sh("docker", "commit", parent, "benchflow/branch-floor:x")
    with ThreadPoolExecutor(len(PROMPTS)) as pool:
        list(pool.map(lambda i: child(snap, parent if i == 0 else None), range(len(PROMPTS))))
    sh("docker", "rmi", snap)
    return fresh_s, time.monotonic() - t


async def snapshot_restore(sandbox: str) -> tuple[float, float]:
    """Seconds of snapshot + restore of a new 200 MB workspace, then of the restored sandbox again
    (one small change since: what a nested fork or a later checkpoint costs)."""
    from benchflow.sandbox import get_backend
    from benchflow.sandbox.base import SandboxSpec
    from benchflow.sandbox.session import sandbox_session

    spec = SandboxSpec(name="branch-bench", environment_dir=None, cache_key="x", image="debian:bookworm-slim",
                       workdir="/app", network_mode="no-network")
    async with sandbox_session(get_backend(sandbox), spec) as session:
        box = session.sandbox
        await box.exec(["sh", "-c", "head -c 209715200 /dev/urandom > /app/blob"], user=spec.sandbox_user)
        seconds = []
        for _ in range(2):
            t = time.monotonic()
            ref = await box.snapshot()
            await box.restore(ref)
            seconds.append(time.monotonic() - t)
            await box.exec(["sh", "-c", "date > /app/changed"], user=spec.sandbox_user)
        return seconds[0], seconds[1]


def breakdown(jobs: Path) -> str:
    """Where a fork's seconds went, from its records."""
    [tree] = list(jobs.rglob("tree.json"))
    result = json.loads((tree.parent / "result.json").read_text())
    seen = [json.loads(p.read_text()) for p in tree.parent.glob("branches/*/children/*/observation.json")]
    start = min(dt.datetime.fromisoformat(o["started_at"]) for o in seen)
    end = max(dt.datetime.fromisoformat(o["finished_at"]) for o in seen)
    wall = (end - start).total_seconds()
    setup, total = result["timing"]["environment_setup"], result["timing"]["total"]
    each = " ".join(f"{o['sandbox_seconds']:.2f}" for o in sorted(seen, key=lambda o: o["started_at"]))
    return (f"parent sandbox start + setup {setup:.2f} s, children {wall:.2f} s from the first start to the last "
            f"end (each: {each}), the rest (snapshot, teardown, records) {total - setup - wall:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sandbox", default="docker")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--task", type=Path, default=TASK)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fork(args.sandbox, Path(tmp) / "warm", args.task)  # the task image is built once, outside the timings
        forks, freshes, floors = [], [], []
        for r in range(args.repeats):
            forks.append(fork(args.sandbox, Path(tmp) / f"fork{r}", args.task))
            freshes.append(fresh(args.sandbox, Path(tmp) / f"fresh{r}", args.task))
            if args.sandbox == "docker":
                floors.append(engine_floor())
        last = breakdown(Path(tmp) / f"fork{args.repeats - 1}")
    f, b = statistics.median(forks), statistics.median(freshes)
    ratios = sorted(x / y for x, y in zip(forks, freshes, strict=True))  # each repeat's pair ran back to back
    snaps = [asyncio.run(snapshot_restore(args.sandbox)) for _ in range(args.repeats)]
    print(f"{'case':<34}{'seconds':>10}{'ratio':>8}")
    print(f"{'4 fresh trials (baseline)':<34}{b:>10.2f}{1.0:>8.2f}")
    print(f"{'fork of 4 children':<34}{f:>10.2f}{f / b:>8.2f}   target <= 0.60")
    print(f"{'  per repeat (fork / fresh)':<34}{'':>10}   " + " ".join(f"{r:.2f}" for r in ratios))
    print(f"last fork: {last}")
    if floors:
        by_hand = sorted(k / h for h, k in floors)
        print(f"{'engine floor by hand (docker CLI)':<34}{statistics.median(h for h, _ in floors):>10.2f}{1.0:>8.2f}"
              f"   4 containers one after another")
        print(f"{'  fork: 1 + commit + 3 at once':<34}{statistics.median(k for _, k in floors):>10.2f}"
              f"{statistics.median(by_hand):>8.2f}   per repeat " + " ".join(f"{r:.2f}" for r in by_hand))
    first, again = [s[0] for s in snaps], [s[1] for s in snaps]
    print(f"{'snapshot + restore, 200 MB':<34}{statistics.median(first):>10.2f}{'':>8}   target <= 2 s "
          f"(worst {max(first):.2f})")
    print(f"{'  again, after the restore':<34}{statistics.median(again):>10.2f}{'':>8}   (worst {max(again):.2f})")


if __name__ == "__main__":
    main()
