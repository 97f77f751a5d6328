"""Run the planned trials concurrently: warm pool, retries with backoff, budgets, cancellation.

Each trial holds a *pool* slot for its whole life (at most ``concurrency +
warm_pool`` sandboxes exist) and a *run* slot for its agent and verifier
phases (at most ``concurrency`` agents run). A trial waiting for a run slot
has its sandbox built and started already: that is the warm pool. A retry
(attempt 2 and on) also holds a *retry* slot for its whole attempt when
``--retry-concurrency`` caps them; first attempts never wait for one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from .budget import BudgetKeeper
from .plan import PlannedTask
from .retry import backoff_sec, is_retryable
from .trial import TrialRequest, run_trial

Event = dict[str, Any]


@dataclass
class Scheduler:
    make_request: Callable[[PlannedTask, int], TrialRequest]
    concurrency: int
    warm_pool: int
    retry_attempts: int
    retry_policy: str
    budget: BudgetKeeper
    emit: Callable[[Event], None]
    run_attempt: Callable[[TrialRequest], Awaitable[dict[str, Any]]] | None = None
    """Runs one attempt: None for ``run_trial`` here, else an executor's (``benchflow.executors``)."""
    retry_slot: Callable[[], AbstractAsyncContextManager[Any]] | None = None
    """Held around each retry attempt (``--retry-concurrency``): None, no cap beyond ``concurrency``."""

    async def run(self, tasks: list[PlannedTask]) -> dict[str, dict[str, Any] | None]:
        """Task name -> final result (None when it never finished: budget or cancellation)."""
        self._pool = asyncio.Semaphore(self.concurrency + self.warm_pool)
        self._run_slots = asyncio.Semaphore(self.concurrency)
        results: dict[str, dict[str, Any] | None] = {t.key: None for t in tasks}
        self._running: dict[str, asyncio.Task] = {}
        watcher = asyncio.create_task(self._watch_budget())
        try:
            coros = [self._task(t, results) for t in tasks]
            # return_exceptions: on Ctrl-C the wait ends only once every trial has removed its sandbox
            # (a plain gather ends at the first task done cancelling, e.g. a queued one, and the process
            # could exit while running trials still clean up)
            for outcome in await asyncio.gather(*coros, return_exceptions=True):
                if isinstance(outcome, BaseException):
                    raise outcome
        finally:
            watcher.cancel()
        return results

    async def _watch_budget(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            if self._running and self.budget.must_cancel_running():
                for key, task in list(self._running.items()):
                    self.budget.cancelled.append(key)
                    task.cancel()

    async def _task(self, planned: PlannedTask, results: dict[str, dict[str, Any] | None]) -> None:
        base = float(os.environ.get("BENCHFLOW_RETRY_BACKOFF_SEC", "1.0"))
        async with self._pool:
            for attempt in range(1, self.retry_attempts + 2):
                if attempt > 1:
                    delay = backoff_sec(attempt, base)
                    self.emit({"type": "retry", "task": planned.key, "attempt": attempt, "delay_sec": delay})
                    await asyncio.sleep(delay)
                capped = attempt > 1 and self.retry_slot is not None
                async with self.retry_slot() if capped else contextlib.nullcontext():  # type: ignore[misc]
                    result = await self._attempt(planned, attempt)
                if result is None:
                    return
                results[planned.key] = result
                retry = attempt <= self.retry_attempts and is_retryable(result, self.retry_policy)
                self.emit({"type": "trial_finished", "task": planned.key, "attempt": attempt,
                           "result": result, "will_retry": retry})
                if not retry:
                    return


    async def _attempt(self, planned: PlannedTask, attempt: int) -> dict[str, Any] | None:
        """Run one attempt; None when the budget kept it from starting or cancelled it."""
        request = self.make_request(planned, attempt)
        request.run_slot = self._run_slots
        key = f"{planned.key}#{attempt}"
        if not self.budget.try_start(key):
            self.budget.not_started.append(planned.key)
            self.emit({"type": "not_started", "task": planned.key, "reason": self.budget.stopped})
            return None
        self.emit({"type": "trial_started", "task": planned.key, "attempt": attempt})
        runner = asyncio.create_task((self.run_attempt or run_trial)(request))
        self._running[key] = runner
        try:
            return await runner
        except asyncio.CancelledError:
            if key in self.budget.cancelled and not _self_cancelled():
                self.emit({"type": "trial_cancelled", "task": planned.key, "reason": self.budget.stopped})
                return None
            raise
        finally:
            self._running.pop(key, None)
            self.budget.end(key)


def _self_cancelled() -> bool:
    """True when the task running this code is itself being cancelled (Ctrl-C, SIGTERM)."""
    current = asyncio.current_task()
    return bool(current and current.cancelling())
