"""``--reward-vector``: a rollout's reward as its components (the published training-signal v1 shape).

``{source, names, kinds, weights, values, formula[, revision, rubric_sha256, note]}``, parallel lists:

- ``rubric`` — a rubric-scored trial (``result.json``'s ``scoring`` block names a completed revision,
  ``scoring/<attempt>.json``, with its criteria): ``tests`` (kind ``gate``, the verifier's reward), then each
  criterion in rubric order: ``scored`` = score / 2 with its weight, ``blocker`` = 1 pass / 0 fail, ``legacy``
  (a v0.1 check) = 1 pass / 0 fail / null not applicable. A criterion with no verdict is null, never 0.
- ``scoring`` — a completed scoring whose revision is missing or has no criteria: ``tests`` and
  ``rubric_reward``, with a ``note`` naming the file.
- ``verifier`` — any other scored trial: every finite numeric key the verifier wrote, nested objects
  flattened with ``.``, ``reward`` first, weights null.
- None for an unscored rollout.
"""

from __future__ import annotations

import math
from typing import Any

from benchflow.records import ScoringRevision, read_optional

from .source import Rollout

RUBRIC_FORMULA = ("reward = rubric_reward if tests pass and every blocker passes, else 0; rubric_reward = "
                  "sum(weight * score) / sum(2 * weight) over scored criteria; values: gate = verifier reward, "
                  "blocker pass = 1 / fail = 0, scored = score / 2, legacy pass = 1 / fail = 0 / "
                  "not_applicable = null")
VERIFIER_FORMULA = "reward = rewards.reward (as written by the verifier)"
_KINDS = {"scored": "scored", "blocker": "blocker", "check": "legacy"}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _weight(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number.is_integer() else None


def _flatten(prefix: str, value: Any, out: list[tuple[str, float]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
    elif (number := _number(value)) is not None:
        out.append((prefix, number))


def _verifier(rollout: Rollout) -> dict[str, Any]:
    pairs: list[tuple[str, float]] = []
    _flatten("", rollout.result.rewards.model_dump() if rollout.result.rewards else {}, pairs)
    pairs.sort(key=lambda pair: pair[0] != "reward")  # stable: the verifier's order after reward
    return {"source": "verifier", "names": [n for n, _ in pairs], "kinds": ["verifier"] * len(pairs),
            "weights": [None] * len(pairs), "values": [v for _, v in pairs], "formula": VERIFIER_FORMULA}


def _value(kind: str, verdict: dict[str, Any]) -> float | None:
    if kind == "scored":
        score = verdict.get("score")
        return score / 2 if isinstance(score, int) and not isinstance(score, bool) and 0 <= score <= 2 else None
    return {"pass": 1.0, "fail": 0.0}.get(verdict.get("outcome"))


def _rubric(rollout: Rollout, current: str) -> dict[str, Any]:
    scoring = rollout.result.scoring
    path = rollout.trial.root / current
    inside = path.resolve().is_relative_to(rollout.trial.root.resolve())  # result.json names it: stay in the trial
    revision = read_optional(ScoringRevision, path, [], name=rollout.trial.name) if inside else None
    tests = _number(revision.verifier_reward) if revision is not None else None
    tests = tests if tests is not None else rollout.reward
    if revision is None or not revision.criteria:
        return {"source": "scoring", "names": ["tests", "rubric_reward"], "kinds": ["gate", "quality"],
                "weights": [None, None], "values": [tests, _number(scoring.rubric_reward)],
                "formula": RUBRIC_FORMULA, "revision": current,
                "note": f"per-criterion verdicts unavailable: {current} is missing or has no criteria"}
    verdicts = {v.name: v.model_dump() for v in revision.criteria}
    defined = [c for c in revision.rubric.get("criteria") or [] if isinstance(c, dict) and c.get("name")]
    order = [str(c["name"]) for c in defined] + [name for name in verdicts if name not in {c["name"] for c in defined}]
    definitions = {str(c["name"]): c for c in defined}
    vector: dict[str, Any] = {"source": "rubric", "names": ["tests"], "kinds": ["gate"], "weights": [None],
                              "values": [tests]}
    for name in order:
        verdict = verdicts.get(name, {})
        kind = _KINDS.get(str(definitions.get(name, {}).get("kind") or verdict.get("kind")), "legacy")
        vector["names"].append(name)
        vector["kinds"].append(kind)
        vector["weights"].append(_weight(definitions.get(name, {}).get("weight", verdict.get("weight")))
                                 if kind == "scored" else None)
        vector["values"].append(_value(kind, verdict))
    sha = revision.rubric.get("sha256")
    return {**vector, "formula": RUBRIC_FORMULA, "revision": current,
            "rubric_sha256": sha if isinstance(sha, str) else None}


def reward_vector(rollout: Rollout) -> dict[str, Any] | None:
    """The rollout's reward components; None when it is unscored."""
    if rollout.reward is None:
        return None
    scoring = rollout.result.scoring
    if scoring is not None and scoring.status == "completed" and scoring.current:
        return _rubric(rollout, scoring.current)
    return _verifier(rollout)
