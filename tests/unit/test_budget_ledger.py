"""Worker shards keep one job budget: keepers in different processes share a ledger folder
(here two keepers of this process, each with its own file, stand for two workers)."""

from __future__ import annotations

from pathlib import Path

from benchflow.jobs.budget import BudgetKeeper
from benchflow.jobs.spec import Budget
from benchflow.shards.ledger import Ledger, document


def _pair(tmp_path: Path, caps: Budget, spends: tuple[dict, dict] | None = None) -> tuple[BudgetKeeper, BudgetKeeper]:
    return tuple(BudgetKeeper(caps, ledger=Ledger(tmp_path, me=f"worker-{i}.json"),
                              spend_source=(lambda s=spends[i]: s) if spends else None)
                 for i in range(2))  # type: ignore[return-value]


def test_max_rollouts_is_one_cap_for_every_worker(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, Budget(max_rollouts=3))
    assert a.try_start("t0#1") and a.try_start("t1#1")
    assert b.try_start("t2#1")
    assert not b.try_start("t3#1") and not a.try_start("t4#1")
    assert (a.stopped, b.stopped) == ("max_rollouts", "max_rollouts")
    b.not_started.append("t3")
    a.not_started.append("t4")
    a.sync(), b.sync()
    doc = document(tmp_path, a.document())
    assert doc["spent"]["rollouts"] == 3 and doc["reason"] == "max_rollouts" and doc["not_started"] == ["t3", "t4"]


def test_tokens_spent_by_two_workers_add_up_to_the_cap(tmp_path: Path) -> None:
    spent_a, spent_b = {"tokens": 0, "cost_usd": 0.0}, {"tokens": 0, "cost_usd": 0.0}
    a, b = _pair(tmp_path, Budget(max_tokens=100), (spent_a, spent_b))
    assert a.try_start("t0#1") and b.try_start("t1#1")
    spent_a.update(tokens=60, cost_usd=0.2)
    spent_b.update(tokens=50, cost_usd=0.1)
    assert not a.must_cancel_running()  # a has not read b's spend yet: 60 of its own, 0 of b's
    assert b.must_cancel_running() and b.stopped == "max_tokens"  # 50 + a's 60: over the cap
    assert not a.try_start("t2#1") and a.stopped == "max_tokens"
    doc = document(tmp_path, a.document())
    assert doc["spent"]["tokens"] == 110 and round(doc["spent"]["cost_usd"], 2) == 0.3


def test_a_keeper_without_a_ledger_counts_only_its_own_spend(tmp_path: Path) -> None:
    alone = BudgetKeeper(Budget(max_tokens=100), spend_source=lambda: {"tokens": 60})
    other = BudgetKeeper(Budget(max_tokens=100), ledger=Ledger(tmp_path, me="worker-1.json"),
                         spend_source=lambda: {"tokens": 60})
    assert other.try_start("x#1")
    assert alone.try_start("t0#1") and not alone.must_cancel_running()
