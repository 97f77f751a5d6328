"""pass@k, pass^k, solve rates and the 95% interval over tasks (contracts §4.2–4.4).

Estimators (unbiased, per task with n trials and c successes)::

    pass@k = 1 - C(n-c, k) / C(n, k)      at least one of k draws succeeds
    pass^k = C(c, k) / C(n, k)            all k draws succeed

Both are ``None`` when n < k; a job value is the mean over tasks with n >= k
(``math.fsum``), the others are counted in ``tasks_short_at_k``.
Both are computed as one exact integer ratio (pass@k as
``(C(n, k) - C(n-c, k)) / C(n, k)``): Python's int/int division rounds once,
correctly, so large n loses nothing and the orderings the math guarantees
(pass^k <= pass@k, monotone in k and c) hold for the floats too.

Two views are reported because versions disagreed (§4.2): the main block
counts every trial, an unscored one as a fail; ``scored_only`` (present when
some trial is unscored) leaves unscored trials out of n, as 0.7's
``mean_reward`` did.

The interval (``benchflow.score.v1`` here): the score is the mean over tasks
of each task's solve rate c/n; its 95% interval is a Student-t interval over
tasks, ``score ± t(0.975, T-1) · sd / sqrt(T)``, clipped to [0, 1], with the
task as the unit of resampling (tasks are the independent draws; trials of a
task are not). We chose it over a percentile bootstrap because it is
deterministic, needs no seed, and costs O(T) on a 10,000-task folder where a
1,000-sample bootstrap in pure Python takes seconds; for T >= 30 the two agree
closely. ``None`` when fewer than two tasks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from benchflow.scoring import pass_at_k, pass_hat_k

_Z = 1.959963984540054
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)
INTERVAL_METHOD = "student_t_over_tasks"


def default_ks(min_n: int) -> list[int]:
    """{1} ∪ powers of two ≤ min_n ∪ multiples of five ≤ min_n, sorted."""
    ks = {1}
    power = 2
    while power <= min_n:
        ks.add(power)
        power *= 2
    ks.update(range(5, min_n + 1, 5))
    return sorted(ks)


def t_critical(df: int) -> float:
    """Two-sided 95% Student-t quantile: table to 30 degrees of freedom, Cornish-Fisher beyond."""
    if df <= 0:
        raise ValueError("df must be positive")
    if df <= len(_T975):
        return _T975[df - 1]
    return _Z + (_Z ** 3 + _Z) / (4 * df)


def interval_over_tasks(values: Sequence[float]) -> dict[str, Any] | None:
    """95% interval of the mean of per-task values (see the module docstring)."""
    count = len(values)
    if count < 2:
        return None
    mean = math.fsum(values) / count
    variance = math.fsum((v - mean) ** 2 for v in values) / (count - 1)
    half = t_critical(count - 1) * math.sqrt(variance / count)
    return {"low": max(0.0, mean - half), "high": min(1.0, mean + half), "confidence": 0.95,
            "method": INTERVAL_METHOD, "tasks": count}


def _rates(per_task: dict[str, tuple[int, int]], ks: list[int]) -> dict[str, Any]:
    """pass@k / pass^k means over the tasks that have at least k trials."""
    at_k: dict[str, Any] = {}
    hat_k: dict[str, Any] = {}
    tasks_at: dict[str, int] = {}
    short_at: dict[str, int] = {}
    for k in ks:
        eligible = [(n, c) for n, c in per_task.values() if n >= k]
        tasks_at[str(k)] = len(eligible)
        short_at[str(k)] = sum(1 for n, _ in per_task.values() if 0 < n < k)
        at_k[str(k)] = math.fsum(pass_at_k(n, c, k) for n, c in eligible) / len(eligible) if eligible else None
        hat_k[str(k)] = math.fsum(pass_hat_k(n, c, k) for n, c in eligible) / len(eligible) if eligible else None
    return {"pass_at_k": at_k, "pass_hat_k": hat_k, "tasks_at_k": tasks_at, "tasks_short_at_k": short_at}


def _block(per_task: dict[str, tuple[int, int]], ks: Iterable[int] | None) -> dict[str, Any]:
    per_task = {task: nc for task, nc in per_task.items() if nc[0] > 0}
    counts = [n for n, _ in per_task.values()]
    min_n = min(counts) if counts else 0
    chosen = sorted({int(k) for k in ks}) if ks else default_ks(min_n)
    trials = sum(counts)
    successes = sum(c for _, c in per_task.values())
    task_rates = [c / n for n, c in per_task.values()]
    block: dict[str, Any] = {
        "tasks": len(per_task), "trials": trials,
        "min_trials_per_task": min_n if counts else None, "max_trials_per_task": max(counts) if counts else None,
        "solve_rate": successes / trials if trials else None,
        "score": math.fsum(task_rates) / len(task_rates) if task_rates else None,
        "interval": interval_over_tasks(task_rates), "ks": chosen,
    }
    block.update(_rates(per_task, chosen))
    caveats = []
    short = {k: v for k, v in block["tasks_short_at_k"].items() if v}
    if short:
        caveats.append("tasks with fewer trials than k are left out of pass@k/pass^k at that k: "
                       + ", ".join(f"k={k}: {v}" for k, v in short.items()))
    if len(per_task) == 1:
        caveats.append("one task: no interval over tasks")
    block["caveats"] = caveats
    return block


def is_success(reward: float | None, solve_threshold: float | None) -> bool:
    """Default rule: passed (reward == 1); with a threshold t: reward >= t."""
    if reward is None:
        return False
    return reward >= solve_threshold if solve_threshold is not None else reward == 1.0


def solve_rates(trials: Iterable[Any], *, ks: Iterable[int] | None = None,
                solve_threshold: float | None = None) -> dict[str, Any]:
    """The ``solve_rates`` block over finished trials (TrialSummary-like: task_name, reward).

    Trials are grouped by task; each trial is one sample (pick attempts and
    drop controls before calling).
    """
    if ks is not None:
        ks = [int(k) for k in ks]
        if any(k < 1 for k in ks):
            raise ValueError("every k must be 1 or more")
    all_view: dict[str, list[int]] = {}
    scored_view: dict[str, list[int]] = {}
    unscored = 0
    nonbinary = 0
    for trial in trials:
        success = int(is_success(trial.reward, solve_threshold))
        entry = all_view.setdefault(trial.task_name, [0, 0])
        entry[0] += 1
        entry[1] += success
        if trial.reward is None:
            unscored += 1
            continue
        if trial.reward not in (0.0, 1.0):
            nonbinary += 1
        scored = scored_view.setdefault(trial.task_name, [0, 0])
        scored[0] += 1
        scored[1] += success
    block = {
        "success_rule": "passed" if solve_threshold is None else f"reward>={solve_threshold:g}",
        "solve_threshold": solve_threshold, "unscored": unscored, "controls_excluded": 0,
        "nonbinary_rewards": nonbinary,
    }
    block.update(_block({t: (n, c) for t, (n, c) in all_view.items()}, ks))
    if nonbinary and solve_threshold is None:
        block["caveats"].append(f"{nonbinary} scored trial(s) have partial rewards (not 0 or 1) and count as "
                                "not solved; pass --solve-threshold to credit them")
    block["scored_only"] = _block({t: (n, c) for t, (n, c) in scored_view.items()}, ks) if unscored else None
    return block
