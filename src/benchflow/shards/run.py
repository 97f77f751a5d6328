"""Worker shards (``--worker-concurrency``): the job's tasks split over worker subprocesses.

The parent has planned the run and holds the job folder's lock; it splits
the unfinished tasks round-robin over ``ceil(concurrency / worker_concurrency)``
workers (``shards/worker.py``), each running its own scheduler with its share of
``--concurrency`` (never more than ``--worker-concurrency``) and writing its
trials into the one job folder. The parent relays their events (one progress
stream), keeps each task's final result, and writes the one summary.

A worker that dies (crash, ``kill -9``) is started again up to
``--worker-retries`` times on what its shard has not finished: finished trials
stay, the sandboxes it left are removed first (``sandbox.orphans.reap``, owner
gone), and the rest run again, as a resumed job would. Ctrl-C or SIGTERM stops
every worker with SIGTERM and waits for each to remove its sandboxes; the job
stays resumable. The job budgets (``--max-cost-usd``, ``--max-tokens``,
``--max-sandbox-seconds``, ``--max-rollouts``) are one budget for all workers
(:mod:`.ledger`). ``--build-concurrency`` is one limit for all workers: a folder
of slot files (``util/file_slots.py``) each build holds one of, and so is
``--retry-concurrency`` (another folder of slots, each retry attempt holds one).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError, ConfigError
from benchflow.jobs.budget import BudgetKeeper
from benchflow.jobs.job import scan_finished
from benchflow.jobs.layout import JobPaths
from benchflow.jobs.plan import Plan, PlannedTask
from benchflow.jobs.spec import RunSpec

from .ledger import document
from .worker import EXIT_REFUSED

Event = dict[str, Any]
EVENT_LINE_LIMIT = 64 * 1024 * 1024
"""Largest event line a worker may send (a trial's result document rides in one)."""


class WorkerFailed(BenchError):
    """A worker shard kept dying; its unfinished tasks stay for a resume."""

    category = "infra_failure"


def shard_sizes(concurrency: int, worker_concurrency: int, tasks: int) -> list[int]:
    """Each worker's concurrency: ``ceil(concurrency / worker_concurrency)`` workers (no more than
    tasks), sharing ``concurrency`` as evenly as possible, none above ``worker_concurrency``."""
    workers = max(1, min(math.ceil(concurrency / worker_concurrency), tasks))
    base, extra = divmod(concurrency, workers)
    return [max(1, min(worker_concurrency, base + (1 if i < extra else 0))) for i in range(workers)]


def refuse_unshardable(spec: RunSpec) -> None:
    """Another executor already spreads the trials. (Job budgets are shared: :mod:`.ledger`.)"""
    if spec.executor != "in-process":
        raise ConfigError(f"--worker-concurrency with --executor {spec.executor}: the executor already spreads "
                          "the trials; drop one of them")


async def run_shards(spec: RunSpec, plan: Plan, paths: JobPaths, todo: list[PlannedTask],
                     emit: Callable[[Event], None]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``todo`` over worker subprocesses; (task key -> final result or None, budget document).
    The feature's ``preflight`` has called :func:`refuse_unshardable` before the job folder was opened."""
    fresh: dict[str, Any] = {t.key: None for t in todo}
    if not todo:
        return fresh, BudgetKeeper(spec.budget).document()
    sizes = shard_sizes(spec.concurrency, spec.workers.concurrency or spec.concurrency, len(todo))
    shards = [todo[i::len(sizes)] for i in range(len(sizes))]
    slots = Path(tempfile.mkdtemp(prefix="benchflow-build-slots-"))
    from benchflow.util.file_slots import make_slots

    make_slots(slots, spec.build_concurrency or spec.concurrency)
    retry_slots = make_slots(slots / "retries", spec.retry.concurrency) if spec.retry.concurrency else None
    ledger = slots / "budget"  # the job budget's spend, one file per worker (.ledger)
    ledger.mkdir(mode=0o700)
    emit({"type": "workers_started", "workers": len(sizes), "concurrency": sizes})
    try:
        runs = [Shard(index=i, spec=spec, plan=plan, paths=paths, keys=[t.key for t in shard], size=size,
                      slots=slots, retry_slots=retry_slots, ledger=ledger, fresh=fresh, emit=emit).run(delay=i * spec.workers.start_stagger_sec)
                for i, (shard, size) in enumerate(zip(shards, sizes))]
        # return_exceptions: a cancelled gather then returns only once every shard has stopped its worker
        # (without it, the first shard to finish its cancellation would end the wait for the others)
        outcomes = await asyncio.gather(*runs, return_exceptions=True)
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if failures:
            raise failures[0]
        left = [keys for keys in outcomes if keys]
        budget = document(ledger, BudgetKeeper(spec.budget).document())
    finally:
        shutil.rmtree(slots, ignore_errors=True)
    if left:
        raise WorkerFailed(f"{len(left)} worker(s) died more than --worker-retries {spec.workers.retries} time(s); "
                           f"{sum(map(len, left))} task(s) unfinished (e.g. {left[0][0]}); rerun the same command "
                           "to resume the job")
    return fresh, budget


class Shard:
    """One shard's worker process, restarted after a crash while retries last."""

    def __init__(self, *, index: int, spec: RunSpec, plan: Plan, paths: JobPaths, keys: list[str], size: int,
                 slots: Path, fresh: dict[str, Any], emit: Callable[[Event], None],
                 retry_slots: Path | None = None, ledger: Path | None = None) -> None:
        self.index, self.spec, self.plan, self.paths = index, spec, plan, paths
        self.keys, self.size, self.slots, self.fresh, self.emit = keys, size, slots, fresh, emit
        self.retry_slots, self.ledger = retry_slots, ledger
        self.final: set[str] = set()

    def _unfinished(self) -> list[str]:
        done = set(scan_finished(self.paths)) | self.final
        return [k for k in self.keys if k not in done]

    async def run(self, delay: float) -> list[str]:
        """Run the shard to its end; the task keys a dead worker left unfinished after the last retry."""
        if delay:
            await asyncio.sleep(delay)
        left = self.keys
        for attempt in range(self.spec.workers.retries + 1):
            if attempt:
                from benchflow.sandbox.orphans import reap

                await asyncio.to_thread(reap, self.plan.backend, str(self.paths.root.resolve()))
            code = await self._one_worker(left)
            if code == 0:
                return []
            left = self._unfinished()
            will_retry = bool(left) and attempt < self.spec.workers.retries and code != EXIT_REFUSED
            self.emit({"type": "worker_exited", "worker": self.index + 1, "code": code, "unfinished": len(left),
                       "will_retry": will_retry, "attempt": attempt + 1})
            if not will_retry:
                return left
        return left

    def _message(self, keys: list[str]) -> str:
        in_process = self.spec.workers.model_copy(update={"concurrency": None})  # a worker runs no shards itself
        worker_spec = self.spec.model_copy(update={"concurrency": self.size, "workers": in_process})
        return json.dumps({"spec": worker_spec.model_dump(mode="json"), "job_dir": str(self.paths.root),
                           "keys": keys, "retry_slots": str(self.retry_slots) if self.retry_slots else None,
                           "budget_ledger": str(self.ledger)}) + "\n"

    async def _one_worker(self, keys: list[str]) -> int:
        from benchflow.sandbox.docker_build import BUILD_SLOTS_ENV

        env = {**os.environ, BUILD_SLOTS_ENV: str(self.slots)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchflow.shards.worker", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, env=env, limit=EVENT_LINE_LIMIT,
            start_new_session=True)  # a terminal's Ctrl-C reaches the parent only; it stops the workers
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(self._message(keys).encode())
            await proc.stdin.drain()
            async for line in proc.stdout:
                self._relay(line)
            return await proc.wait()
        except BaseException:
            await _stop(proc)
            raise

    def _relay(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        if not isinstance(event, dict) or "type" not in event:
            return
        if event["type"] == "trial_finished" and not event.get("will_retry"):
            self.fresh[event["task"]] = event["result"]
            self.final.add(event["task"])
        elif event["type"] in {"not_started", "trial_cancelled"}:
            self.final.add(event["task"])
        if event["type"] == "worker_error":
            event = {**event, "worker": self.index + 1}
        self.emit(event)


async def _drain(stream: asyncio.StreamReader | None) -> None:
    """Read a stopping worker's events to the end, so it never blocks writing one."""
    if stream is not None:
        with contextlib.suppress(Exception):
            while await stream.read(65536):
                pass


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the worker and wait until it has cleaned up and exited, whatever cancels us meanwhile."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    waiting = asyncio.ensure_future(asyncio.gather(proc.wait(), _drain(proc.stdout)))
    while not waiting.done():
        try:
            await asyncio.shield(waiting)
        except asyncio.CancelledError:
            continue
