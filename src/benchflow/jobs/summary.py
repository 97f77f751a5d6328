"""The job's ``summary.json`` and the end-of-run line, from each planned task's final trial.

Counts use the audit buckets of the contracts (§3.10): a verifier error is
``verifier_errored``; reward 1 ``passed``; any other reward ``failed``; an error
without a reward ``errored``; anything else ``unscored``. Unscored and errored
trials are left out of the score's denominator in ``score_excl_errors``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from typing import Any

from benchflow.records import JobSummary, TrialResult, Unreadable, as_result
from benchflow.scoring import audit_bucket, pass_at_k


def _typed(result: TrialResult | dict[str, Any] | None) -> TrialResult | None:
    """A final trial's result through the model (the engine hands over the dict it just wrote)."""
    if result is None:
        return None
    try:
        return as_result(result)
    except Unreadable:
        return None


def _bucket(result: TrialResult | None) -> str:
    if result is None:
        return "unscored"
    return audit_bucket(result.reward, result.error, result.verifier_error)


def build_summary(*, job_name: str, spec: Any, sandbox: str,
                  results: Mapping[str, TrialResult | dict[str, Any] | None],
                  elapsed_sec: float, budget: dict[str, Any] | None,
                  provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """``summary.json`` as written; ``results`` maps every planned task to its final result (None: never finished)."""
    typed = {task: _typed(result) for task, result in results.items()}
    finals = [r for r in typed.values() if r is not None]
    buckets = Counter(_bucket(r) for r in typed.values())
    total = len(typed)
    passed, failed = buckets["passed"], buckets["failed"]
    rewards = [r.reward for r in finals if r.reward is not None]
    categories = Counter(r.error_category for r in finals if r.error_category)
    verifier_categories = Counter(r.verifier_error_category for r in finals if r.verifier_error_category)
    score = passed / total if total else 0.0
    scored = passed + failed
    excl = passed / scored if scored else 0.0
    return JobSummary(
        job_name=job_name, agent=spec.agent, model=spec.model, environment=sandbox, **(provenance or {}),
        concurrency=spec.concurrency, agent_idle_timeout_sec=spec.agent_idle_timeout_sec, total=total,
        passed=passed, failed=failed, errored=buckets["errored"], verifier_errored=buckets["verifier_errored"],
        unscored=buckets["unscored"], pass_=passed, fail=failed, error=buckets["errored"],
        timed_out=sum(1 for r in finals if r.error_category == "timeout"),
        error_categories=dict(categories) or None, verifier_error_categories=dict(verifier_categories) or None,
        score=f"{score:.1%}", score_ratio=round(score, 6),
        score_excl_errors=f"{excl:.1%}", score_excl_errors_ratio=round(excl, 6),
        mean_reward=round(sum(rewards) / len(rewards), 6) if rewards else None,
        elapsed_sec=round(elapsed_sec, 1), budget=budget,
        trials={task: (r.trial_name if r else None) for task, r in sorted(typed.items())},
        seeds=seed_stats(typed) if getattr(spec, "seeds", None) else None,
        checkpoint_retries=retry_stats(typed),
    ).to_json()


def retry_stats(results: Mapping[str, TrialResult | None]) -> dict[str, Any] | None:
    """``checkpoint_retries``: how the ``--retry-from-checkpoint`` retries did beside their trials."""
    retried = {task: r for task, r in results.items() if r is not None and r.retry is not None}
    if not retried:
        return None
    rewards = {task: r.retry.reward for task, r in sorted(retried.items())}
    scored = [v for v in rewards.values() if v is not None]
    return {"retried": len(retried), "passed": sum(1 for v in scored if v >= 1.0),
            "improved": sum(1 for task, r in retried.items()
                            if r.retry.reward is not None and r.retry.reward > (r.reward or 0.0)),
            "mean_reward": round(statistics.fmean(scored), 6) if scored else None, "trials": rewards}


def seed_stats(results: Mapping[str, TrialResult | None]) -> dict[str, Any]:
    """Per task over its seeds: n, mean reward, population variance, pass@1 and pass@n."""
    per_task: dict[str, list[float]] = {}
    for key, result in results.items():
        task = key.split("@seed", 1)[0]
        per_task.setdefault(task, [])
        if result is not None and result.reward is not None:
            per_task[task].append(result.reward)
    out = {}
    for task, rewards in sorted(per_task.items()):
        n, c = len(rewards), sum(1 for r in rewards if r == 1.0)
        out[task] = {"n": n, "mean_reward": round(statistics.fmean(rewards), 6) if rewards else None,
                     "variance": round(statistics.pvariance(rewards), 6) if rewards else None,
                     "pass_at_k": {"1": pass_at_k(n, c, 1), str(n): pass_at_k(n, c, n)} if n else {}}
    return out


def outcomes_line(summary: dict[str, Any]) -> str:
    scored = summary["passed"] + summary["failed"]
    errored = summary["errored"] + summary["verifier_errored"]
    return (f"Outcomes: {scored} scored ({summary['passed']} passed, {summary['failed']} failed), "
            f"{summary['unscored']} unscored, {errored} errored")
