"""The reviewer's answer, parsed strictly against the rubric.

The answer is one JSON object keyed by criterion name (optionally inside a single
```json fence, as models tend to write it)::

    {"reward_hacking": {"outcome": "pass", "explanation": "..."},     # v0.1 / v0.2 blocker
     "method_soundness": {"score": 2, "explanation": "..."}}          # v0.2 scored

Every criterion must be answered, nothing else may be, and each value has exactly
the keys its kind asks for. Anything else is a :class:`MalformedAnswer` carrying
the raw text: a reviewer error, never a silent 0.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .rubric import Criterion, Rubric

_FENCE = re.compile(r"^```(?:json)?[ \t]*\n(.*)\n```$", re.DOTALL)
OUTCOMES = {"check": ("pass", "fail", "not_applicable"), "blocker": ("pass", "fail")}


class MalformedAnswer(Exception):
    """The reviewer's answer does not fit the rubric; ``raw`` is the text it gave. Not a BenchError: the
    review report records it as the rollout's review error and goes on."""

    def __init__(self, reason: str, raw: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


@dataclass(frozen=True)
class Verdict:
    name: str
    kind: str
    explanation: str
    outcome: str | None = None
    """pass / fail / not_applicable (checks and blockers)."""
    score: int | None = None
    """0, 1 or 2 (scored criteria)."""
    weight: int | None = None

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "weight": self.weight}
        if self.score is not None:
            out["score"] = self.score
        else:
            out["outcome"] = self.outcome
        out["explanation"] = self.explanation
        return out


def answer_format(rubric: Rubric) -> str:
    """An example answer for ``rubric`` (shown to the reviewer)."""
    example = {c.name: ({"score": "0 | 1 | 2", "explanation": "why"} if c.kind == "scored" else
                        {"outcome": " | ".join(OUTCOMES[c.kind]), "explanation": "why"}) for c in rubric.criteria}
    return json.dumps(example, indent=2)


def _decode(raw: str) -> dict[str, Any]:
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        raise MalformedAnswer("the reviewer gave no answer", raw)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedAnswer(f"the answer is not one JSON object (line {exc.lineno}: {exc.msg})", raw) from None
    if not isinstance(data, dict):
        raise MalformedAnswer(f"the answer is a JSON {type(data).__name__}, not an object keyed by criterion", raw)
    return data


def _verdict(crit: Criterion, value: Any, raw: str) -> Verdict:
    where = f"criterion {crit.name!r}"
    if not isinstance(value, dict):
        raise MalformedAnswer(f"{where}: expected an object with 'explanation', got {type(value).__name__}", raw)
    key = "score" if crit.kind == "scored" else "outcome"
    extra = set(value) - {key, "explanation"}
    if extra or key not in value or "explanation" not in value:
        raise MalformedAnswer(f"{where}: needs exactly '{key}' and 'explanation' (got {sorted(value)})", raw)
    explanation = value["explanation"]
    if not isinstance(explanation, str):
        raise MalformedAnswer(f"{where}: 'explanation' must be a string", raw)
    if crit.kind == "scored":
        score = value["score"]
        if type(score) is not int or score not in (0, 1, 2):
            raise MalformedAnswer(f"{where}: 'score' must be the integer 0, 1 or 2 (got {score!r})", raw)
        return Verdict(crit.name, crit.kind, explanation, score=score, weight=crit.weight)
    outcome = value["outcome"]
    if outcome not in OUTCOMES[crit.kind]:
        raise MalformedAnswer(f"{where}: 'outcome' must be one of {', '.join(OUTCOMES[crit.kind])} "
                              f"(got {outcome!r})", raw)
    return Verdict(crit.name, crit.kind, explanation, outcome=outcome, weight=crit.weight)


def parse_answer(raw: str, rubric: Rubric) -> list[Verdict]:
    """One verdict per criterion, in rubric order.

    Raises:
        MalformedAnswer: the answer is not valid JSON, misses or adds a criterion, or has a wrong value.
    """
    data = _decode(raw)
    names = [c.name for c in rubric.criteria]
    missing = [n for n in names if n not in data]
    unknown = sorted(set(data) - set(names))
    if missing or unknown:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + \
                ([f"not in the rubric: {', '.join(unknown)}"] if unknown else [])
        raise MalformedAnswer("the answer does not match the rubric's criteria: " + "; ".join(parts), raw)
    return [_verdict(c, data[c.name], raw) for c in rubric.criteria]
