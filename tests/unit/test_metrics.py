"""pass@k, pass^k, solve rates and the interval, against hand-computed values."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from benchflow.results.metrics import (
    default_ks,
    interval_over_tasks,
    pass_at_k,
    pass_hat_k,
    solve_rates,
    t_critical,
)


@dataclass
class T:
    task_name: str
    reward: float | None


def trials(spec: dict[str, list[float | None]]) -> list[T]:
    return [T(task, reward) for task, rewards in spec.items() for reward in rewards]


FIXTURE = {"A": [1.0, 1.0, 0.0], "B": [1.0, None], "C": [0.5, 0.8]}


def test_estimators_by_hand():
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)
    assert pass_hat_k(5, 2, 2) == pytest.approx(1 / 10)
    assert pass_at_k(3, 0, 2) == 0.0
    assert pass_hat_k(3, 3, 3) == 1.0
    assert pass_at_k(2, 1, 3) is None and pass_hat_k(2, 1, 3) is None
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)


def test_default_ks():
    assert default_ks(1) == [1]
    assert default_ks(12) == [1, 2, 4, 5, 8, 10]
    assert default_ks(0) == [1]


def test_solve_rates_counts_unscored_as_fail_and_reports_scored_only():
    block = solve_rates(trials(FIXTURE))
    assert block["success_rule"] == "passed"
    assert (block["tasks"], block["trials"], block["unscored"], block["nonbinary_rewards"]) == (3, 7, 1, 2)
    assert block["solve_rate"] == pytest.approx(3 / 7)
    assert block["ks"] == [1, 2]
    assert block["pass_at_k"]["1"] == pytest.approx((2 / 3 + 1 / 2 + 0) / 3)
    assert block["pass_at_k"]["2"] == pytest.approx((1 + 1 + 0) / 3)
    assert block["pass_hat_k"]["2"] == pytest.approx((1 / 3 + 0 + 0) / 3)
    assert any("partial rewards" in c for c in block["caveats"])
    scored = block["scored_only"]
    assert (scored["tasks"], scored["trials"], scored["ks"]) == (3, 6, [1])
    assert scored["solve_rate"] == pytest.approx(3 / 6)
    assert scored["pass_at_k"]["1"] == pytest.approx((2 / 3 + 1 + 0) / 3)


def test_solve_threshold_credits_partial_rewards():
    block = solve_rates(trials(FIXTURE), solve_threshold=0.6)
    assert block["success_rule"] == "reward>=0.6"
    assert block["solve_rate"] == pytest.approx(4 / 7)
    assert block["pass_at_k"]["1"] == pytest.approx((2 / 3 + 1 / 2 + 1 / 2) / 3)
    assert not any("partial rewards" in c for c in block["caveats"])


def test_n_smaller_than_k_is_short_not_zero():
    block = solve_rates(trials(FIXTURE), ks=[3])
    assert block["tasks_at_k"] == {"3": 1} and block["tasks_short_at_k"] == {"3": 2}
    assert block["pass_at_k"]["3"] == pytest.approx(1.0)   # only A (n=3, c=2) is eligible
    assert block["pass_hat_k"]["3"] == pytest.approx(0.0)
    assert any("k=3: 2" in c for c in block["caveats"])
    assert solve_rates(trials({"A": [1.0]}), ks=[2])["pass_at_k"]["2"] is None


def test_no_unscored_means_no_scored_only_block():
    assert solve_rates(trials({"A": [1.0, 0.0]}))["scored_only"] is None


def test_interval_over_tasks_by_hand():
    values = [1.0] * 7 + [0.0] * 3
    sd = math.sqrt((7 * 0.09 + 3 * 0.49) / 9)
    expected_low = 0.7 - 2.262 * sd / math.sqrt(10)
    block = interval_over_tasks(values)
    assert block["low"] == pytest.approx(expected_low, abs=1e-9)
    assert block["high"] == 1.0  # clipped
    assert block["method"] == "student_t_over_tasks" and block["tasks"] == 10
    assert interval_over_tasks([1.0]) is None
    assert t_critical(1000) == pytest.approx(1.962, abs=1e-3)
