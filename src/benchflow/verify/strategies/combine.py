"""``verifier.rubric.combine``: the reward as a weighted combination of rubric dimensions.

Applies when verifier.md declares ``rubric.combine`` and more than one
dimension (a single dimension is the reward itself). Each dimension's value is
read from what the strategy produced: the metric of the dimension's name
(``metrics``, a top-level number, a ``rubric`` item, or a judge criterion in
``reward-details.json``); a dimension whose ``source`` names the selected
strategy, ``reward`` or ``reward_text`` takes the strategy's reward. A
dimension with no value is a verifier error, never a 0. ``combine`` is one of
the aggregate methods (``weighted_mean``, ``mean``, ``weighted_sum``,
``all_pass``, ``any_pass``, ``threshold``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchflow.verify.rewards import RewardError, aggregate

WHOLE_REWARD = {"reward", "reward_text"}


def _details_criteria(verifier_dir: Path) -> dict[str, float]:
    try:
        details = json.loads((verifier_dir / "reward-details.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    items = details.get("criteria") if isinstance(details, dict) else None
    return {str(i["name"]): float(i["score"]) for i in items or []
            if isinstance(i, dict) and "name" in i and isinstance(i.get("score"), (int, float))}


def dimension_value(name: str, source: str | None, rewards: dict[str, Any], strategy: str | None,
                    criteria: dict[str, float]) -> float | None:
    if source is not None and (source in WHOLE_REWARD or source == strategy):
        return float(rewards["reward"])
    metrics = rewards.get("metrics") if isinstance(rewards.get("metrics"), dict) else {}
    for found in (metrics.get(name), rewards.get(name)):
        if isinstance(found, (int, float)) and not isinstance(found, bool):
            return float(found)
    for item in rewards.get("rubric") or []:
        if isinstance(item, dict) and item.get("name") == name:
            return float(item["score"])
    return criteria.get(name)


def combine(rewards: dict[str, Any], rubric: Any, strategy: str | None, verifier_dir: Path,
            reward_range: tuple[float, float] | None = None) -> dict[str, Any]:
    """``rewards`` with ``reward`` replaced by the combination of the rubric's dimensions.

    Raises:
        RewardError: a dimension without a value, or a combination the aggregate rules refuse.
    """
    dims = rubric.dimensions
    if not rubric.combine or len(dims) < 2:
        return rewards
    criteria = _details_criteria(verifier_dir)
    values: dict[str, float] = {}
    for name, dim in dims.items():
        value = dimension_value(name, dim.source, rewards, strategy, criteria)
        if value is None:
            raise RewardError(f"verifier.md rubric dimension {name!r} has no value: the verifier wrote no "
                              f"metric of that name (source {dim.source or 'unset'!s}); write it to reward.json")
        values[name] = value
    weights = {name: float(dim.weight) for name, dim in dims.items()}
    policy = {"method": rubric.combine, "weights": weights}
    extra = getattr(rubric, "model_extra", None) or {}
    if "threshold" in extra:
        policy["threshold"] = extra["threshold"]
    combined = aggregate({"metrics": values}, policy)
    lo, hi = reward_range or (0.0, 1.0)
    if not lo <= combined <= hi:
        raise RewardError(f"verifier.md rubric.combine gives {combined}, outside the reward range [{lo:g}, {hi:g}]")
    items = [{"name": name, "score": min(max(values[name], 0.0), 1.0), "weight": weights[name],
              "source": dims[name].source} for name in dims]
    return {**rewards, "reward": combined, "rubric": items,
            "aggregate": {"method": rubric.combine, "weights": weights, "strategy_reward": rewards.get("reward")}}
