"""Ctrl-C while trials run and others wait their turn: the scheduler returns only after every running
trial has finished cleaning up (its sandbox removed), never as soon as a queued one is cancelled."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from benchflow.jobs import scheduler as sched
from benchflow.jobs.budget import BudgetKeeper
from benchflow.jobs.spec import Budget


async def test_cancelling_waits_for_running_trials_to_clean_up(monkeypatch: pytest.MonkeyPatch) -> None:
    started = asyncio.Event()
    cleaned: list[str] = []

    async def trial(req):
        started.set()
        try:
            await asyncio.Event().wait()  # runs until cancelled
        finally:
            await asyncio.shield(asyncio.sleep(0.05))  # removing the sandbox takes a while
            cleaned.append(req.task.key)

    monkeypatch.setattr(sched, "run_trial", trial)
    scheduler = sched.Scheduler(
        make_request=lambda task, attempt: SimpleNamespace(task=task, attempt=attempt, run_slot=None),
        concurrency=1, warm_pool=0, retry_attempts=0, retry_policy="default", budget=BudgetKeeper(Budget()),
        emit=lambda _e: None)
    tasks = [SimpleNamespace(name=n, key=n) for n in ("running", "queued-1", "queued-2")]
    run = asyncio.create_task(scheduler.run(tasks))
    await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert cleaned == ["running"]
