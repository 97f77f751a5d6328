"""Reward files: ``reward.json`` / ``reward.txt`` precedence, validation and aggregates.

``reward.json`` is authoritative when present; ``reward.txt`` holds one number.
Both present: they must agree. A reward.json without ``reward`` needs an
aggregate (its own ``aggregate`` block) and at least one numeric metric; the
computed reward is added to the map. Rewards must be finite and inside the
task's ``reward_range`` (default [0, 1]); booleans are not numbers.

The verifier wrote these files, so they are opened without following links
(:mod:`benchflow.util.nofollow`): a ``reward.txt`` that links to a host file
is refused, never read.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchflow.util import nofollow

STRUCTURED_KEYS = frozenset({
    "aggregate", "artifacts", "debug", "details", "details_path", "errors", "evidence", "items",
    "metadata", "participants", "raw", "reason", "reasons", "regressions", "winner",
})
_SPACES = {"output", "action", "reasoning", "memory", "latent"}
_GRANULARITIES = {"terminal", "step"}
MAX_REWARD_FILE_BYTES = 16 << 20


class RewardError(ValueError):
    """A reward file that cannot be scored; the message names the file and the problem. Not a BenchError:
    a ValueError the verifier runner turns into the trial's verifier error."""


def _number(value: Any, where: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RewardError(f"{where}: {value!r} is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise RewardError(f"{where}: {value!r} is not finite")
    if not lo <= number <= hi:
        raise RewardError(f"{where}: {number} is outside the reward range [{lo:g}, {hi:g}]")
    return number


def _metrics(reward: Mapping[str, Any]) -> dict[str, float]:
    if isinstance(reward.get("metrics"), Mapping):
        return {k: float(v) for k, v in reward["metrics"].items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {k: float(v) for k, v in reward.items()
            if k not in STRUCTURED_KEYS and k not in {"reward", "metrics", "rubric", "space", "granularity"}
            and isinstance(v, (int, float)) and not isinstance(v, bool)}


def aggregate(reward: Mapping[str, Any], policy: Mapping[str, Any]) -> float:
    """The reward an aggregate policy computes from the map's metrics."""
    metrics = _metrics(reward)
    if not metrics:
        raise RewardError("reward.json: an aggregate needs at least one numeric metric")
    method = str(policy.get("method", "mean")).replace("-", "_")
    criteria = policy.get("criteria")
    if criteria is not None and set(criteria) != set(metrics):
        raise RewardError(f"reward.json: aggregate criteria {sorted(criteria)} differ from metrics {sorted(metrics)}")
    weights = policy.get("weights")
    if weights is None:
        if method == "weighted_sum":
            raise RewardError("reward.json: aggregate 'weighted_sum' needs weights")
        weights = {k: 1.0 for k in metrics}
    missing = set(metrics) - set(weights)
    if missing:
        raise RewardError(f"reward.json: aggregate weights miss {sorted(missing)}")
    w = {k: float(weights[k]) for k in metrics}
    if any(v < 0 or not math.isfinite(v) for v in w.values()):
        raise RewardError("reward.json: aggregate weights must be finite and >= 0")
    values = list(metrics.values())
    if method == "mean":
        return math.fsum(values) / len(values)
    if method == "all_pass":
        return 1.0 if all(v >= 0.5 for v in values) else 0.0
    if method == "any_pass":
        return 1.0 if any(v >= 0.5 for v in values) else 0.0
    if method == "weighted_sum":
        return math.fsum(w[k] * m for k, m in metrics.items())
    total = math.fsum(w.values())
    if total <= 0:
        raise RewardError("reward.json: aggregate weights sum to 0")
    weighted_mean = math.fsum(w[k] * m for k, m in metrics.items()) / total
    if method == "weighted_mean":
        return weighted_mean
    if method == "threshold":
        threshold = float(policy.get("threshold", 0.7))
        return 1.0 if weighted_mean >= threshold else 0.0
    raise RewardError(f"reward.json: unknown aggregate method {method!r} "
                      "(use mean, all_pass, any_pass, weighted_sum, weighted_mean or threshold)")


def validate_reward_map(reward: Any, lo: float = 0.0, hi: float = 1.0) -> dict[str, Any]:
    """Check a reward.json object; returns it with ``reward`` computed when an aggregate is declared."""
    if not isinstance(reward, dict) or not reward:
        raise RewardError("reward.json: must be a non-empty JSON object")
    out = dict(reward)
    if "reward" in out:
        out["reward"] = _number(out["reward"], "reward.json 'reward'", lo, hi)
    for key, value in out.items():
        if key in STRUCTURED_KEYS or key == "reward":
            continue
        if key == "rubric":
            if not isinstance(value, list):
                raise RewardError("reward.json 'rubric': must be a list of {score, ...} objects")
            for i, item in enumerate(value):
                if not isinstance(item, Mapping) or "score" not in item:
                    raise RewardError(f"reward.json 'rubric'[{i}]: needs a numeric 'score'")
                _number(item["score"], f"reward.json 'rubric'[{i}].score", 0.0, 1.0)
        elif key == "metrics":
            if not isinstance(value, Mapping):
                raise RewardError("reward.json 'metrics': must be an object of numbers")
            for name, metric in value.items():
                _number(metric, f"reward.json metric {name!r}", lo, hi)
        elif key == "space":
            if value not in _SPACES:
                raise RewardError(f"reward.json 'space': {value!r} is not one of {sorted(_SPACES)}")
        elif key == "granularity":
            if value not in _GRANULARITIES:
                raise RewardError(f"reward.json 'granularity': {value!r} is not one of {sorted(_GRANULARITIES)}")
        else:
            _number(value, f"reward.json {key!r}", lo, hi)
    if "reward" not in out:
        policy = out.get("aggregate")
        if not isinstance(policy, Mapping) or not _metrics(out):
            raise RewardError("reward.json: missing numeric 'reward' or aggregate policy for multi-metric rewards")
        out["reward"] = _number(aggregate(out, policy), "reward.json aggregate", lo, hi)
    return out


def parse_reward_text(text: str, lo: float = 0.0, hi: float = 1.0) -> float:
    stripped = text.strip()
    if not stripped:
        raise RewardError("reward.txt: empty")
    try:
        value = float(stripped)
    except ValueError:
        raise RewardError(f"reward.txt: {stripped[:40]!r} is not a number") from None
    return _number(value, "reward.txt", lo, hi)


def parse_reward_files(folder: Path, reward_range: tuple[float, float] | None = None,
                       policy: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The reward map from ``folder`` (the downloaded /logs/verifier), or None when neither file exists.

    ``policy`` is verifier.md's ``outputs.aggregate_policy``: it computes the reward of a
    reward.json that declares none and has no ``aggregate`` block of its own.

    Raises:
        RewardError: a file exists but cannot be scored.
    """
    lo, hi = reward_range or (0.0, 1.0)
    txt_text, json_text = _read_reward(folder, "reward.txt"), _read_reward(folder, "reward.json")
    if txt_text is None and json_text is None:
        return None
    txt_value = parse_reward_text(txt_text, lo, hi) if txt_text is not None else None
    if json_text is None:
        return {"reward": txt_value}
    try:
        raw = json.loads(json_text)
    except json.JSONDecodeError as exc:
        raise RewardError(f"reward.json: not JSON ({exc.msg} at line {exc.lineno})") from None
    method = (policy or {}).get("method")
    if method and isinstance(raw, dict) and "reward" not in raw and not isinstance(raw.get("aggregate"), Mapping):
        raw = {**raw, "aggregate": {k: v for k, v in policy.items() if k != "field"}}
    declared = isinstance(raw, dict) and ("reward" in raw or isinstance(raw.get("aggregate"), Mapping))
    if txt_value is not None and isinstance(raw, dict) and not declared:
        return {"reward": txt_value, **{k: v for k, v in raw.items()}}
    reward = validate_reward_map(raw, lo, hi)
    if txt_value is not None and not math.isclose(reward["reward"], txt_value, abs_tol=1e-9):
        raise RewardError(f"reward.json reward {reward['reward']} differs from reward.txt {txt_value}")
    return reward


def _read_reward(folder: Path, name: str) -> str | None:
    """The text of ``folder/name``; None when it is missing or a folder.

    Raises:
        RewardError: it is a link, a special file, or too large to be a reward.
    """
    path = folder / name
    if not os.path.lexists(path) or (path.is_dir() and not path.is_symlink()):
        return None
    try:
        data = nofollow.read_bytes(path, limit=MAX_REWARD_FILE_BYTES)
    except FileNotFoundError:
        return None
    except nofollow.UnsafeFile as exc:
        raise RewardError(f"{name}: {exc.strerror}; the verifier must write the reward as a plain file") from None
    except OSError as exc:
        raise RewardError(f"{name}: cannot be read ({exc.strerror})") from None
    return data.decode("utf-8", errors="replace")
