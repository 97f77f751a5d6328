"""The scheduler's rules with a stand-in trial: concurrency, retries, budgets (no sandboxes needed)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from benchflow.jobs import scheduler as sched
from benchflow.jobs.budget import BudgetKeeper
from benchflow.jobs.retry import backoff_sec, is_retryable
from benchflow.jobs.spec import Budget


def planned(n: int) -> list[SimpleNamespace]:
    return [SimpleNamespace(name=f"t{i}", key=f"t{i}") for i in range(n)]


def make(budget: Budget | None = None, *, concurrency: int = 2, warm: int = 0, retries: int = 2,
         events: list | None = None) -> sched.Scheduler:
    return sched.Scheduler(
        make_request=lambda task, attempt: SimpleNamespace(task=task, attempt=attempt, run_slot=None),
        concurrency=concurrency, warm_pool=warm, retry_attempts=retries, retry_policy="default",
        budget=BudgetKeeper(budget or Budget()), emit=(events.append if events is not None else lambda e: None))


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHFLOW_RETRY_BACKOFF_SEC", "0")


async def test_at_most_concurrency_agents_run_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    running = peak = 0

    async def fake(req):
        nonlocal running, peak
        async with req.run_slot:
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.02)
            running -= 1
        return {"rewards": {"reward": 1.0}}

    monkeypatch.setattr(sched, "run_trial", fake)
    results = await make(concurrency=3, warm=1).run(planned(10))
    assert peak == 3
    assert all(r == {"rewards": {"reward": 1.0}} for r in results.values())


async def test_infra_failures_are_retried_and_agent_timeouts_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[str, int] = {}

    async def fake(req):
        calls[req.task.name] = calls.get(req.task.name, 0) + 1
        if req.task.name == "t0":
            return {"rewards": None, "error": "connection reset", "error_category": "infra_failure"}
        if req.task.name == "t1":
            return {"rewards": {"reward": 0.0}, "error": "timed out", "error_category": "timeout"}
        if calls["t2"] == 1:
            return {"rewards": None, "error": "install failed", "error_category": "install_failure"}
        return {"rewards": {"reward": 1.0}}

    monkeypatch.setattr(sched, "run_trial", fake)
    events: list = []
    results = await make(retries=2, events=events).run(planned(3))
    assert calls == {"t0": 3, "t1": 1, "t2": 2}
    assert results["t2"]["rewards"] == {"reward": 1.0}
    assert results["t0"]["error_category"] == "infra_failure"
    assert [e["attempt"] for e in events if e["type"] == "retry"].count(2) == 2


async def test_max_rollouts_stops_new_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fake(req):
        return {"rewards": {"reward": 1.0}}

    monkeypatch.setattr(sched, "run_trial", fake)
    s = make(Budget(max_rollouts=2), concurrency=1)
    results = await s.run(planned(5))
    assert sum(1 for r in results.values() if r) == 2
    doc = s.budget.document()
    assert doc["stopped"] and doc["reason"] == "max_rollouts" and len(doc["not_started"]) == 3


async def test_max_sandbox_seconds_cancels_running_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fake(req):
        await asyncio.sleep(30)
        return {"rewards": {"reward": 1.0}}

    monkeypatch.setattr(sched, "run_trial", fake)
    s = make(Budget(max_sandbox_seconds=0.4), concurrency=2)
    results = await asyncio.wait_for(s.run(planned(3)), timeout=10)
    assert all(r is None for r in results.values())
    doc = s.budget.document()
    assert doc["reason"] == "max_sandbox_seconds" and len(doc["cancelled"]) == 2 and doc["not_started"] == ["t2"]


def test_retry_rules_follow_the_contract() -> None:
    assert is_retryable({"rewards": None, "error_category": "pipe_closed"})
    assert not is_retryable({"rewards": None, "error_category": "provider_auth"})
    assert not is_retryable({"rewards": None, "verifier_error": "verifier timed out", "error_category": None})
    assert not is_retryable({"rewards": None, "error_category": "sandbox_setup",
                             "sandbox_startup_info": {"reason": "build_failed"}})
    assert not is_retryable({"rewards": None, "error_category": "sandbox_setup",
                             "sandbox_startup_info": {"reason": "refused"}}, "unscored-only")
    assert is_retryable({"rewards": None, "error_category": "sandbox_setup",
                         "sandbox_startup_info": {"reason": "start_failed"}})
    assert is_retryable({"rewards": None, "error_category": "api_error", "error": "provider api error [x/transient]"})
    assert not is_retryable({"rewards": None, "error_category": "api_error", "error": "provider api error [x/permanent]"})
    assert is_retryable({"rewards": None, "error_category": "other"}, "unscored-only")
    assert [backoff_sec(k) for k in (2, 3, 4, 7)] == [2.0, 4.0, 8.0, 30.0]


async def _retries_under_a_cap(retry_slot, n: int = 4) -> tuple[int, int]:
    """(peak first attempts, peak retry attempts running at once) for ``n`` tasks whose first attempt fails
    with an infrastructure error; every first attempt waits until all ``n`` have started."""
    all_started = asyncio.Event()
    firsts = running = peak = 0

    async def fake(req):
        nonlocal firsts, running, peak
        if req.attempt == 1:
            firsts += 1
            if firsts == n:
                all_started.set()
            await asyncio.wait_for(all_started.wait(), timeout=10)
            return {"rewards": None, "error": "connection reset", "error_category": "infra_failure"}
        running += 1
        peak = max(peak, running)
        for _ in range(5):  # let every other retry that may run now start
            await asyncio.sleep(0)
        running -= 1
        return {"rewards": {"reward": 1.0}}

    s = make(concurrency=n, retries=1)
    s.run_attempt, s.retry_slot = fake, retry_slot
    results = await s.run(planned(n))
    assert all(r == {"rewards": {"reward": 1.0}} for r in results.values())
    return firsts, peak


async def test_retry_concurrency_caps_retries_and_never_first_attempts() -> None:
    one = asyncio.Semaphore(1)
    assert await _retries_under_a_cap(lambda: one) == (4, 1)
    assert await _retries_under_a_cap(None) == (4, 4)  # without the cap they all run together


async def test_retry_slots_in_a_folder_cap_retries_across_schedulers(tmp_path) -> None:
    """Worker shards share --retry-concurrency through file slots: two schedulers, one slot."""
    from benchflow.util.file_slots import held_slot, make_slots

    folder = make_slots(tmp_path / "retries", 1)
    inside = peak = 0

    async def fake(req):
        nonlocal inside, peak
        if req.attempt == 1:
            return {"rewards": None, "error": "connection reset", "error_category": "infra_failure"}
        inside += 1
        peak = max(peak, inside)
        for _ in range(5):
            await asyncio.sleep(0)
        inside -= 1
        return {"rewards": {"reward": 1.0}}

    shards = [make(concurrency=2, retries=1) for _ in range(2)]
    for s in shards:
        s.run_attempt, s.retry_slot = fake, (lambda: held_slot(folder))
    await asyncio.gather(*(s.run(planned(2)) for s in shards))
    assert peak == 1
