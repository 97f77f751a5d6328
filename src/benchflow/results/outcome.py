"""How a trial ended: outcome buckets, error categories, controls, denominators.

Contracts §3.10–3.11 and §4.3–4.5. Everything here is a pure function of the
fields read from ``result.json`` so the reader, metrics, compare and the run
engine's summary agree on one classification.

Two bucket schemes exist on purpose:

* the *score* bucket (``score_bucket``) lets a reward win over an error string
  (a timed-out agent whose verifier still scored is ``passed``/``failed``);
* the *audit* bucket (``benchflow.scoring.audit_bucket``) puts a verifier error first; it is what
  a 0.7 ``summary.json`` counted.

``TrialSummary.outcome`` is the score bucket, except that a finished trial
with neither reward nor any error is ``unscored`` rather than ``errored``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

Outcome = Literal["passed", "failed", "errored", "verifier_errored", "unscored"]
Execution = Literal["completed", "errored", "timed_out", "integration_failed", "unfinished"]
Assessment = Literal["scored", "error", "unscored"]
Control = Literal["oracle", "empty"]

ORACLE_AGENTS = frozenset({"oracle"})
EMPTY_AGENTS = frozenset({"nop", "empty", "noop"})

TIMEOUT_CATEGORIES = frozenset({"timeout", "idle_timeout"})
INTEGRATION_CATEGORIES = frozenset({"agent_integration", "usage_limit"})


def clean_reward(value: Any) -> float | None:
    """A finite, non-bool number as float; anything else (None, NaN, text) is no reward."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def score_bucket(reward: float | None, error: str | None, verifier_error: str | None) -> str:
    """Disjoint bucket used for pass counts: the reward wins even if an error string exists."""
    if reward is not None:
        return "passed" if reward == 1.0 else "failed"
    if error:
        return "errored"
    if verifier_error:
        return "verifier_errored"
    return "errored"


def outcome_of(reward: float | None, error: str | None, verifier_error: str | None, finished: bool) -> Outcome:
    if not finished:
        return "unscored"
    if reward is None and not error and not verifier_error:
        return "unscored"
    return score_bucket(reward, error, verifier_error)  # type: ignore[return-value]


def execution_of(error: str | None, error_category: str | None, finished: bool) -> Execution:
    """Did the agent side run to completion (independent of the verifier)."""
    if not finished:
        return "unfinished"
    if not error:
        return "completed"
    category = (error_category or "").split(":", 1)[0]
    if category in TIMEOUT_CATEGORIES:
        return "timed_out"
    if category in INTEGRATION_CATEGORIES:
        return "integration_failed"
    return "errored"


def assessment_of(reward: float | None, verifier_error: str | None) -> Assessment:
    if reward is not None:
        return "scored"
    return "error" if verifier_error else "unscored"


def control_of(agent: str | None, task_name: str) -> Control | None:
    """Control runs (§4.3): the oracle, the empty/nop agent, or task copies ``__o`` / ``__e``."""
    name = (agent or "").lower()
    if name in ORACLE_AGENTS or task_name.endswith("__o"):
        return "oracle"
    if name in EMPTY_AGENTS or task_name.endswith("__e"):
        return "empty"
    return None


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def denominators(trials: Iterable[Any]) -> dict[str, Any]:
    """The §4.5 denominators over ``trials`` (TrialSummary-like objects).

    Unfinished trials (no result.json) are counted as ``interrupted`` and left
    out of every other figure.
    """
    counts = Counter()
    rewards: list[float] = []
    for trial in trials:
        if not trial.finished:
            counts["interrupted"] += 1
            continue
        counts["attempted"] += 1
        scored = trial.assessment == "scored"
        counts["scored"] += scored
        counts["assessment_errors"] += trial.assessment == "error"
        counts["unscored"] += trial.assessment == "unscored"
        counts["execution_errors"] += trial.execution != "completed"
        counts["integration_failures"] += trial.execution == "integration_failed"
        counts["timed_out"] += trial.execution == "timed_out"
        passed = trial.reward == 1.0
        counts["passed"] += passed
        if scored:
            rewards.append(trial.reward)
            if trial.execution == "completed":
                counts["clean_scored"] += 1
                counts["clean_passed"] += passed
    keys = ("attempted", "scored", "assessment_errors", "unscored", "execution_errors", "integration_failures",
            "timed_out", "passed", "clean_scored", "clean_passed", "interrupted")
    out: dict[str, Any] = {key: counts[key] for key in keys}
    out["mean_reward"] = math.fsum(rewards) / len(rewards) if rewards else None
    out["pass_rate_scored"] = _rate(counts["passed"], counts["scored"])
    out["pass_rate_attempted"] = _rate(counts["passed"], counts["attempted"])
    out["pass_rate_clean"] = _rate(counts["clean_passed"], counts["clean_scored"])
    return out


def category_counts(trials: Iterable[Any]) -> tuple[dict[str, int], dict[str, int]]:
    """``({error_category: n}, {verifier_error_category: n})`` over finished trials."""
    errors: Counter[str] = Counter()
    verifier: Counter[str] = Counter()
    for trial in trials:
        if trial.error_category:
            errors[trial.error_category] += 1
        if trial.verifier_error_category:
            verifier[trial.verifier_error_category] += 1
    return dict(sorted(errors.items())), dict(sorted(verifier.items()))
