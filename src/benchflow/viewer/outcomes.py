"""``benchflow.outcomes/1``: what the Outcomes, Pareto and Training tabs draw, aggregated on the server.

``GET /api/outcomes?id=J[&part=pareto|outcomes|training]`` returns it for one
job, or with ``id=.`` for every job the viewer shows; the page never receives
trial lists it would have to count itself, so 10,000 trials stay fast. ::

    {"kind": "benchflow.outcomes", "schema_version": 1, "schema_minor": 0,
     "jobs": [{"id", "name", "trials"}],
     "pareto":   see viewer/pareto.py
     "outcomes": {"counts": {outcome: n}, "error_categories": {cat: n},
                  "timeline": {"start", "bin_sec", "bins": [{"t", "outcomes": {..}, "categories": {..}}]},
                  "reward_histogram": {"edges": [...], "counts": [...], "scored", "unscored"},
                  "tasks": [{"task", "n", "passed", "rate", "low", "high"}], "tasks_total",
                  "slowest": [trial rows], "most_expensive": [trial rows]},
     "training": see viewer/training.py}

Per-task intervals are Wilson score intervals over that task's trials (95%):
a task has few trials, where a bootstrap or a t interval collapses to a point.
Times are as recorded (local, no zone); the timeline counts finished trials by
``finished_at``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from benchflow.results import JobDocument, TrialSummary, metrics
from benchflow.scoring import wilson

from .pareto import pareto_block
from .training import training_block

KIND = "benchflow.outcomes"
SCHEMA_VERSION = 1
SCHEMA_MINOR = 0
PARTS = ("pareto", "outcomes", "training")
OUTCOMES = ("passed", "failed", "errored", "verifier_errored", "unscored")
MAX_BINS = 40
TASK_ROWS = 2000
TOP_ROWS = 10
_NICE_SECONDS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)

Ident = Callable[[str], "str | None"]


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value.replace(tzinfo=None)


def _category(trial: TrialSummary) -> str | None:
    return trial.error_category or trial.verifier_error_category


def timeline(trials: list[TrialSummary]) -> dict[str, Any]:
    """Finished trials per time bin, by outcome and by error category (bins of a round width, at most 40)."""
    stamped = [(t, _when(t.finished_at)) for t in trials if t.finished]
    stamped = [(t, when) for t, when in stamped if when is not None]
    if not stamped:
        return {"start": None, "bin_sec": None, "bins": [], "undated": sum(1 for t in trials if t.finished)}
    starts = [w for t in trials if (w := _when(t.started_at)) is not None] + [w for _, w in stamped]
    start = min(starts)
    span = max((when - start).total_seconds() for _, when in stamped)
    width = next((s for s in _NICE_SECONDS if span / s < MAX_BINS), math.ceil(span / MAX_BINS / 86400) * 86400)
    count = max(1, math.floor(span / width) + 1)
    bins = [{"t": i * width, "outcomes": dict.fromkeys(OUTCOMES, 0), "categories": {}} for i in range(count)]
    for trial, when in stamped:
        slot = bins[min(count - 1, int((when - start).total_seconds() // width))]
        slot["outcomes"][trial.outcome] += 1
        if (category := _category(trial)) is not None:
            slot["categories"][category] = slot["categories"].get(category, 0) + 1
    return {"start": start.isoformat(sep=" "), "bin_sec": width, "bins": bins,
            "undated": sum(1 for t in trials if t.finished) - len(stamped)}


def reward_histogram(trials: list[TrialSummary], bins: int = 10) -> dict[str, Any]:
    """Scored rewards in ``bins`` equal bins over [0, 1] (widened to hold any reward outside it)."""
    rewards = [t.reward for t in trials if t.finished and t.reward is not None]
    low, high = min([0.0, *rewards]), max([1.0, *rewards])
    width = (high - low) / bins
    counts = [0] * bins
    for reward in rewards:
        counts[min(bins - 1, int((reward - low) / width))] += 1
    return {"edges": [low + i * width for i in range(bins + 1)], "counts": counts, "scored": len(rewards),
            "unscored": sum(1 for t in trials if t.finished and t.reward is None)}


def task_rates(trials: list[TrialSummary]) -> list[dict[str, Any]]:
    """Per task: trials, successes (``benchflow.score.v1`` rule), solve rate and its Wilson interval."""
    counts: dict[str, list[int]] = {}
    for trial in trials:
        if trial.finished:
            entry = counts.setdefault(trial.task_name, [0, 0])
            entry[0] += 1
            entry[1] += metrics.is_success(trial.reward, None)
    rows = []
    for task, (n, passed) in counts.items():
        low, high = wilson(passed, n)
        rows.append({"task": task, "n": n, "passed": passed, "rate": passed / n, "low": low, "high": high})
    rows.sort(key=lambda r: (r["rate"], r["task"]))
    return rows


def trial_row(trial: TrialSummary, ident: Ident) -> dict[str, Any]:
    return {"id": ident(trial.path), "name": trial.name, "task_name": trial.task_name, "job": trial.job,
            "outcome": trial.outcome, "reward": trial.reward, "error_category": _category(trial),
            "duration_sec": trial.duration_sec, "cost_usd": trial.cost_usd, "total_tokens": trial.total_tokens}


def _top(trials: list[TrialSummary], field: str, ident: Ident) -> list[dict[str, Any]]:
    have = [t for t in trials if getattr(t, field) is not None]
    have.sort(key=lambda t: (-getattr(t, field), t.name))
    return [trial_row(t, ident) for t in have[:TOP_ROWS]]


def outcomes_block(trials: list[TrialSummary], ident: Ident) -> dict[str, Any]:
    finished = [t for t in trials if t.finished]
    counts = Counter(t.outcome for t in finished)
    categories = Counter(c for t in finished if (c := _category(t)) is not None)
    tasks = task_rates(finished)
    return {
        "trials": len(trials), "finished": len(finished), "counts": {o: counts.get(o, 0) for o in OUTCOMES},
        "error_categories": dict(sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))),
        "timeline": timeline(finished), "reward_histogram": reward_histogram(finished),
        "tasks": tasks[:TASK_ROWS], "tasks_total": len(tasks),
        "slowest": _top(finished, "duration_sec", ident), "most_expensive": _top(finished, "cost_usd", ident),
    }


def outcomes_document(jobs: list[tuple[str, JobDocument]], ident: Ident,
                      parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
    """The ``benchflow.outcomes/1`` document over ``jobs`` (``(id, document)`` pairs), with the asked parts."""
    trials: list[TrialSummary] = []
    for _, doc in jobs:
        for trial in doc.trials:
            trials.append(trial if trial.job else trial.model_copy(update={"job": doc.name}))
    document: dict[str, Any] = {
        "kind": KIND, "schema_version": SCHEMA_VERSION, "schema_minor": SCHEMA_MINOR,
        "jobs": [{"id": ident_, "name": doc.name, "trials": len(doc.trials)} for ident_, doc in jobs],
    }
    if "pareto" in parts:
        document["pareto"] = pareto_block([doc for _, doc in jobs])
    if "outcomes" in parts:
        document["outcomes"] = outcomes_block(trials, ident)
    if "training" in parts:
        document["training"] = training_block(trials, ident)
    return document
