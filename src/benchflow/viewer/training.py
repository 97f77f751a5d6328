"""The Training block of ``benchflow.outcomes/1``: can these rollouts train a model?

Per rollout (finished trial): is it training-grade (token ids and logprobs on
every model call, each prompt extending the last): :func:`benchflow.train.tokens.grade`,
the check ``bench train token-coverage`` prints. Per group (``task, agent, model, job``, the
default ``--group-by`` of ``bench train convert``, contracts §4.8): its size
and the spread of its scored rewards, since a group whose rewards are all
equal gives GRPO no signal (every advantage is 0).

::

    {"summary": {"rollouts", "training_grade", "no_model_calls", "reasons": {reason: n},
                 "groups", "groups_with_variance", "groups_without_variance", "groups_too_small"},
     "group_by": ["task", "agent", "model", "job"],
     "groups": [{"task", "agent", "model", "job", "size", "scored", "mean", "std", "min", "max",
                 "spread", "has_variance"}],
     "rollouts": [{"id", "name", "task_name", "job", "reward", "calls", "with_prompt_token_ids",
                   "with_sampled_token_ids", "with_logprobs", "extends_previous", "training_grade",
                   "reasons": [...]}],
     "rollouts_total", "groups_total"}

Rows are capped (:data:`ROW_CAP`), rollouts that are not training-grade first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths
from benchflow.results import TrialSummary
from benchflow.train.tokens import grade

GROUP_BY = ("task", "agent", "model", "job")
_COUNT = re.compile(r"^\d+ call\(s\)")
"""Reasons are tallied without their per-rollout count ("3 call(s) without logprobs" → "some call(s) …")."""
ROW_CAP = 1000


def _spread(rewards: list[float]) -> dict[str, Any]:
    if not rewards:
        return {"mean": None, "std": None, "min": None, "max": None, "spread": None, "has_variance": False}
    mean = math.fsum(rewards) / len(rewards)
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / (len(rewards) - 1)) if len(rewards) > 1 else None
    return {"mean": mean, "std": std, "min": min(rewards), "max": max(rewards),
            "spread": max(rewards) - min(rewards), "has_variance": max(rewards) > min(rewards)}


def training_block(trials: list[TrialSummary], ident: Callable[[str], str | None]) -> dict[str, Any]:
    finished = [t for t in trials if t.finished]
    rollouts = []
    reasons: Counter[str] = Counter()
    for trial in finished:
        coverage = grade(TrialPaths(Path(trial.path)).llm_trajectory)
        reasons.update(_COUNT.sub("some call(s)", reason) for reason in coverage["reasons"])
        rollouts.append({"id": ident(trial.path), "name": trial.name, "task_name": trial.task_name, "job": trial.job,
                         "reward": trial.reward, **coverage})
    grouped: dict[tuple[Any, ...], list[TrialSummary]] = {}
    for trial in finished:
        grouped.setdefault((trial.task_name, trial.agent, trial.model, trial.job), []).append(trial)
    groups = []
    for key, members in sorted(grouped.items(), key=lambda item: tuple(map(str, item[0]))):
        rewards = [t.reward for t in members if t.reward is not None]
        groups.append({**dict(zip(GROUP_BY, key)), "size": len(members), "scored": len(rewards), **_spread(rewards)})
    graded = sum(1 for r in rollouts if r["training_grade"])
    summary = {
        "rollouts": len(rollouts), "training_grade": graded,
        "no_model_calls": sum(1 for r in rollouts if r["calls"] == 0), "reasons": dict(reasons.most_common()),
        "groups": len(groups), "groups_with_variance": sum(1 for g in groups if g["has_variance"]),
        "groups_without_variance": sum(1 for g in groups if g["scored"] >= 2 and not g["has_variance"]),
        "groups_too_small": sum(1 for g in groups if g["scored"] < 2),
    }
    rollouts.sort(key=lambda r: (r["training_grade"], r["name"]))
    groups.sort(key=lambda g: (g["has_variance"], -g["size"], str(g["task"])))
    return {"summary": summary, "group_by": list(GROUP_BY), "groups": groups[:ROW_CAP], "groups_total": len(groups),
            "rollouts": rollouts[:ROW_CAP], "rollouts_total": len(rollouts)}
