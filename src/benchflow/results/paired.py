"""The paired test of ``bench eval compare``: is B better than A on the same tasks, or is it noise?

Per paired task, each side's trials count as the agent's work, except a trial with no reward whose error
is not the agent's doing (``bench explain``'s fault: infrastructure, setup or the task): it is left out of
both denominators and listed apart, so a broken engine on one side is not scored against its agent. A trial
with no reward for the agent's own reason (a timeout, a crash) counts as reward 0, as it would have scored.

- pass/fail: the exact two-sided McNemar test over the tasks solved on one side only (a task is solved
  on a side when most of its counted trials reached the solve threshold; a tie is neither);
- rewards: the mean paired delta (B − A) and a 95% interval from a paired bootstrap over tasks, with a fixed
  seed, so the same two jobs always print the same interval.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from .documents import TrialSummary

SEED = 0
RESAMPLES = 10_000
NOT_THE_AGENT = frozenset({"infrastructure", "setup", "task"})


@lru_cache(maxsize=256)
def _fault(category: str) -> str:
    from .explain import UnknownCode, lookup

    try:
        return lookup(category.split(":", 1)[0]).fault
    except UnknownCode:
        return "infrastructure"  # a category we cannot place is not held against the agent


def not_the_agent(trial: TrialSummary) -> bool:
    """True for an unscored trial whose error is not the agent's doing."""
    if trial.reward is not None:
        return False
    category = trial.error_category or trial.verifier_error_category
    return category is None or _fault(category) in NOT_THE_AGENT


def counted(trials: Iterable[TrialSummary]) -> tuple[list[float], list[TrialSummary]]:
    """(the rewards the agent earned, the trials left out as not its doing)."""
    rewards, left_out = [], []
    for trial in trials:
        if not_the_agent(trial):
            left_out.append(trial)
        else:
            rewards.append(trial.reward if trial.reward is not None else 0.0)
    return rewards, left_out


def _solved(rewards: Sequence[float], threshold: float | None) -> bool | None:
    hits = sum((r >= threshold) if threshold is not None else (r == 1.0) for r in rewards)
    return None if 2 * hits == len(rewards) else 2 * hits > len(rewards)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: the binomial test of the discordant pairs against 1/2."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def paired_bootstrap(deltas: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean of ``deltas`` resampled with replacement."""
    draw = random.Random(seed)
    n = len(deltas)
    means = sorted(math.fsum(draw.choices(deltas, k=n)) / n for _ in range(resamples))
    return means[int(0.025 * (resamples - 1))], means[math.ceil(0.975 * (resamples - 1))]


def paired_test(pairs: Iterable[tuple[str, list[TrialSummary], list[TrialSummary]]],
                solve_threshold: float | None = None) -> dict[str, Any]:
    """The ``paired_test`` block of a comparison from ``(task, trials A, trials B)`` of the paired tasks."""
    a_only, b_only, deltas = [], [], []
    left_out: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    for task, trials_a, trials_b in pairs:
        (rewards_a, out_a), (rewards_b, out_b) = counted(trials_a), counted(trials_b)
        for side, out in (("a", out_a), ("b", out_b)):
            left_out[side] += [{"task": task, "trial": t.name, "category": t.error_category
                                or t.verifier_error_category} for t in out]
        if not rewards_a or not rewards_b:
            continue
        deltas.append(math.fsum(rewards_b) / len(rewards_b) - math.fsum(rewards_a) / len(rewards_a))
        solved_a, solved_b = _solved(rewards_a, solve_threshold), _solved(rewards_b, solve_threshold)
        if solved_a is True and solved_b is False:
            a_only.append(task)
        elif solved_a is False and solved_b is True:
            b_only.append(task)
    interval = list(paired_bootstrap(deltas)) if deltas else None
    return {
        "tasks": len(deltas),
        "pass_fail": {"test": "exact McNemar, two-sided", "solved_by_a_only": len(a_only),
                      "solved_by_b_only": len(b_only), "p_value": mcnemar_exact(len(a_only), len(b_only))},
        "reward": {"test": "paired bootstrap over tasks", "mean_delta": math.fsum(deltas) / len(deltas)
                   if deltas else None, "ci95": interval, "resamples": RESAMPLES, "seed": SEED},
        "flipped": {"to_b": sorted(b_only), "to_a": sorted(a_only)},
        "not_the_agent": left_out,
    }
