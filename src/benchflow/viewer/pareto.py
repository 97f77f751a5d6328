"""The Pareto block of ``benchflow.outcomes/1``: one point per agent+model setting, and its frontiers.

A point is every finished trial (best attempt per task in each job, as
``load_job`` counts them) that ran with one setting: agent, harness, model,
effort and BenchFlow version, the fields ``bench eval metrics`` splits on
(:data:`benchflow.results.report.SETTING_FIELDS`). Its figures:

* ``pass_rate``: the ``benchflow.score.v1`` score of :func:`metrics.solve_rates`
  (mean over tasks of each task's solve rate, an unscored trial a fail);
* ``interval``: 95% percentile bootstrap over tasks (contracts §4.4): 200
  resamples of the per-task solve rates (in task-name order), drawn with ``random.Random(seed)``
  where ``seed`` is fixed per point (the first 4 bytes of the SHA-256 of the
  point's setting), by :func:`benchflow.results.lift.bootstrap_interval`;
* ``mean_cost_usd`` / ``mean_duration_sec``: per task the mean over its trials
  that recorded the value, then the mean over tasks (``None`` when no trial
  recorded it: the point is left off that plot).

A point whose trials ran on more than one task set is refused with the reason
(one pass rate would pool different tasks; ``bench eval metrics`` gives no
pooled score either). Points are compared only with points of the same task
set. Control runs (oracle, nop) are shown as reference points and left out of
the frontiers, unless every point is a control. On each axis a point is
dominated when another of its task set has a pass rate at least as high and a
cost (or time) at least as low, one of them strictly; the frontier is the
points left, sorted by cost (or time).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from typing import Any

from benchflow.results import JobDocument, TrialSummary, metrics
from benchflow.results.lift import bootstrap_interval
from benchflow.results.report import SETTING_FIELDS, _setting

SAMPLES = 200
METHOD = "percentile_bootstrap_over_tasks"
AXES = {"cost": "mean_cost_usd", "time": "mean_duration_sec"}
_TASK_SET = SETTING_FIELDS.index("task_set")
_POINT_FIELDS = tuple(f for f in SETTING_FIELDS if f != "task_set")
NO_TASK_SET = "(no task set recorded)"


def task_set_name(point: dict[str, Any]) -> str:
    return str(point["setting"]["task_set"] or NO_TASK_SET)


def point_seed(setting: dict[str, Any]) -> int:
    """The bootstrap seed of one point: stable across runs and machines, different per setting."""
    text = json.dumps(setting, sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def task_interval(task_rates: list[float], seed: int) -> dict[str, Any] | None:
    """95% bootstrap interval of the mean per-task rate (``None`` below two tasks)."""
    if len(task_rates) < 2:
        return None
    block = bootstrap_interval(task_rates, SAMPLES, seed)
    block["method"] = METHOD
    block["tasks"] = len(task_rates)
    return block


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return math.fsum(values) / len(values) if values else None


def _per_task_mean(trials: list[TrialSummary], field: str) -> tuple[float | None, float]:
    """Mean over tasks of each task's mean ``field`` (trials without it left out), and the share that had it."""
    by_task: dict[str, list[float]] = {}
    have = 0
    for trial in trials:
        value = getattr(trial, field)
        if value is not None and math.isfinite(value):
            by_task.setdefault(trial.task_name, []).append(float(value))
            have += 1
    return _mean(_mean(v) for v in by_task.values()), (have / len(trials) if trials else 0.0)


def _label(setting: dict[str, Any]) -> str:
    parts = [setting.get("agent") or "?", setting.get("model") or "no model"]
    if setting.get("reasoning_effort"):
        parts.append(f"effort {setting['reasoning_effort']}")
    if setting.get("harness"):
        parts.append(str(setting["harness"]))
    return " · ".join(str(p) for p in parts)


def _point(setting: dict[str, Any], task_set: str | None, trials: list[TrialSummary], jobs: list[str],
           ) -> dict[str, Any]:
    solve = metrics.solve_rates(trials)
    by_task: dict[str, list[int]] = {}
    for trial in trials:
        counts = by_task.setdefault(trial.task_name, [0, 0])
        counts[0] += 1
        counts[1] += metrics.is_success(trial.reward, None)
    rates = [c / n for _, (n, c) in sorted(by_task.items())]
    seed = point_seed({**setting, "task_set": task_set})
    cost, cost_share = _per_task_mean(trials, "cost_usd")
    duration, duration_share = _per_task_mean(trials, "duration_sec")
    controls = {t.control for t in trials}
    return {
        "label": _label(setting), "setting": {**setting, "task_set": task_set},
        "control": controls.pop() if len(controls) == 1 else None,
        "jobs": sorted(set(jobs)), "tasks": len(by_task), "trials": len(trials),
        "passed": sum(c for _, c in by_task.values()), "pass_rate": solve["score"],
        "interval": task_interval(rates, seed), "seed": seed,
        "mean_cost_usd": cost, "cost_coverage": cost_share,
        "mean_duration_sec": duration, "duration_coverage": duration_share,
        "dominated": {}, "notes": [],
    }


def _mark_frontiers(points: list[dict[str, Any]]) -> dict[str, dict[str, list[str]]]:
    """Set each point's ``dominated`` per axis; the frontier ids per task set and axis."""
    frontiers: dict[str, dict[str, list[str]]] = {}
    by_set: dict[str, list[dict[str, Any]]] = {}
    for point in points:
        by_set.setdefault(task_set_name(point), []).append(point)
    for task_set, members in by_set.items():
        ranked = [p for p in members if p["control"] is None] or members
        frontiers[task_set] = {}
        for axis, field in AXES.items():
            eligible = [p for p in ranked if p[field] is not None and p["pass_rate"] is not None]
            front = []
            for p in eligible:
                dominated = any(q is not p and q["pass_rate"] >= p["pass_rate"] and q[field] <= p[field]
                                and (q["pass_rate"] > p["pass_rate"] or q[field] < p[field]) for q in eligible)
                p["dominated"][axis] = dominated
                if not dominated:
                    front.append(p)
            for p in members:
                p["dominated"].setdefault(axis, None)  # not ranked on this axis (control, or no value)
            front.sort(key=lambda p: (p[field], -p["pass_rate"]))
            frontiers[task_set][axis] = [p["id"] for p in front]
    return frontiers


def pareto_block(jobs: list[JobDocument]) -> dict[str, Any]:
    """The ``pareto`` block over ``jobs`` (see the module docstring)."""
    grouped: dict[tuple[Any, ...], dict[str | None, tuple[list[TrialSummary], list[str]]]] = {}
    for doc in jobs:
        for trial in doc.trials:
            if not trial.finished:
                continue
            full = _setting(doc.settings, trial)
            key = tuple(v for i, v in enumerate(full) if i != _TASK_SET)
            members, names = grouped.setdefault(key, {}).setdefault(full[_TASK_SET], ([], []))
            members.append(trial)
            names.append(doc.name)
    points: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for key, by_set in sorted(grouped.items(), key=lambda item: tuple(map(str, item[0]))):
        setting = dict(zip(_POINT_FIELDS, key))
        if len(by_set) > 1:
            sets = sorted(str(s or NO_TASK_SET) for s in by_set)
            refused.append({
                "label": _label(setting), "setting": setting,
                "jobs": sorted({j for _, names in by_set.values() for j in names}),
                "reason": (f"its trials ran on {len(sets)} task sets ({', '.join(sets)}): one pass rate would pool "
                           "different tasks, so no point is drawn; view each task set's jobs on their own")})
            continue
        (task_set, (members, names)), = by_set.items()
        point = _point(setting, task_set, members, names)
        point["id"] = f"p{len(points) + 1}"
        if point["mean_cost_usd"] is None:
            point["notes"].append("no trial recorded a cost: not on the cost plot")
        elif point["cost_coverage"] < 1:
            point["notes"].append(f"cost recorded for {point['cost_coverage']:.0%} of trials; the mean is over those")
        points.append(point)
    frontiers = _mark_frontiers(points)
    task_sets = sorted({task_set_name(p) for p in points})
    notes = []
    if len(task_sets) > 1:
        notes.append(f"the points ran on {len(task_sets)} task sets; each is plotted on its own "
                     "(pass rates over different tasks are not compared)")
    if any(p["control"] for p in points) and any(p["control"] is None for p in points):
        notes.append("control runs (oracle, nop) are drawn as reference points and left out of the frontier")
    return {"interval": {"method": METHOD, "confidence": 0.95, "samples": SAMPLES, "unit": "task"},
            "axes": dict(AXES), "task_sets": task_sets, "points": points, "frontier": frontiers,
            "refused": refused, "notes": notes}
