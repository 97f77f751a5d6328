"""Worker shards: how --concurrency is split over workers, what is refused, and the build slots
shared by processes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from benchflow.errors import ConfigError
from benchflow.shards.run import refuse_unshardable, shard_sizes
from benchflow.jobs.spec import RunSpec
from benchflow.util.file_slots import held_slot, make_slots, try_take


@pytest.mark.parametrize(("concurrency", "per_worker", "tasks", "sizes"), [
    (2, 1, 4, [1, 1]),        # ceil(2 / 1) = 2 workers of 1
    (8, 4, 64, [4, 4]),
    (5, 2, 10, [2, 2, 1]),    # the total stays 5, none above 2
    (8, 4, 1, [4]),           # never more workers than tasks
    (3, 8, 9, [3]),           # one worker never runs more than --concurrency
])
def test_concurrency_is_split_over_ceil_workers(concurrency, per_worker, tasks, sizes) -> None:
    assert shard_sizes(concurrency, per_worker, tasks) == sizes


def test_other_executors_are_refused_with_shards_and_job_budgets_are_not() -> None:
    refuse_unshardable(RunSpec.model_validate({"workers": {"concurrency": 1}, "budget": {"max_cost_usd": 5}}))
    with pytest.raises(ConfigError, match="--executor ray"):
        refuse_unshardable(RunSpec.model_validate({"workers": {"concurrency": 1}, "executor": "ray"}))
    refuse_unshardable(RunSpec.model_validate({"workers": {"concurrency": 1}}))


def test_build_slots_bound_holders_across_open_files(tmp_path: Path) -> None:
    """flock is per open file, so two holders in one process count like two processes."""
    folder = make_slots(tmp_path / "slots", 1)
    assert (folder.stat().st_mode & 0o777) == 0o700

    async def scenario() -> list[str]:
        order: list[str] = []

        async def build(name: str, hold: asyncio.Event | None) -> None:
            async with held_slot(folder):
                order.append(f"{name} in")
                if hold is not None:
                    await hold.wait()
                order.append(f"{name} out")

        release = asyncio.Event()
        first = asyncio.create_task(build("first", release))
        while not order:
            await asyncio.sleep(0.01)
        assert try_take(folder) is None  # the one slot is held
        second = asyncio.create_task(build("second", None))
        release.set()
        await asyncio.gather(first, second)
        return order

    assert asyncio.run(scenario()) == ["first in", "first out", "second in", "second out"]


def test_a_worker_that_keeps_dying_is_retried_then_fails_the_run(tmp_path: Path, monkeypatch) -> None:
    """Each death is reported; after --worker-retries restarts the run stops with the tasks left for a resume."""
    from types import SimpleNamespace

    from benchflow.shards import run as shards
    from benchflow.jobs.layout import JobPaths
    from benchflow.sandbox import orphans

    calls: list[list[str]] = []

    async def dies(self, keys: list[str]) -> int:
        calls.append(keys)
        return -9

    monkeypatch.setattr(shards.Shard, "_one_worker", dies)
    monkeypatch.setattr(orphans, "reap", lambda backend, job: [])
    events: list[dict] = []
    spec = RunSpec.model_validate({"concurrency": 1, "workers": {"concurrency": 1, "retries": 2,
                                                                "start_stagger_sec": 0}})
    todo = [SimpleNamespace(key="a"), SimpleNamespace(key="b")]
    plan = SimpleNamespace(backend=None)
    with pytest.raises(shards.WorkerFailed, match="2 task\\(s\\) unfinished"):
        asyncio.run(shards.run_shards(spec, plan, JobPaths(tmp_path / "job"), todo, events.append))
    assert calls == [["a", "b"]] * 3
    exits = [e for e in events if e["type"] == "worker_exited"]
    assert [e["will_retry"] for e in exits] == [True, True, False]


def test_every_worker_gets_the_one_retry_slots_folder(tmp_path: Path, monkeypatch) -> None:
    """--retry-concurrency N with shards: one folder of N slots, named in every worker's message."""
    import json
    from types import SimpleNamespace

    from benchflow.jobs.layout import JobPaths
    from benchflow.shards import run as shards

    seen: list[dict] = []

    async def worker(self, keys: list[str]) -> int:
        message = json.loads(self._message(keys))
        seen.append({**message, "slots": sorted(p.name for p in Path(message["retry_slots"]).iterdir())})
        return 0

    monkeypatch.setattr(shards.Shard, "_one_worker", worker)
    spec = RunSpec.model_validate({"concurrency": 2, "workers": {"concurrency": 1, "start_stagger_sec": 0},
                                   "retry": {"concurrency": 2}})
    todo = [SimpleNamespace(key="a"), SimpleNamespace(key="b")]
    asyncio.run(shards.run_shards(spec, SimpleNamespace(backend=None), JobPaths(tmp_path / "job"), todo,
                                  lambda e: None))
    assert len(seen) == 2 and seen[0]["retry_slots"] == seen[1]["retry_slots"]
    assert seen[0]["slots"] == ["slot-0", "slot-1"]
    worker = RunSpec.model_validate(seen[0]["spec"])  # a worker runs its shard in process, not in shards again
    assert (worker.concurrency, worker.workers.concurrency, worker.workers.start_stagger_sec) == (1, None, 0)
