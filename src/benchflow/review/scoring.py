"""Aggregation and decision of a review (contracts §8.4).

v0.2: ``raw_quality = Σ score·weight / Σ 2·weight`` over the scored criteria;
the gates are the deterministic pass (verifier reward 1) and every blocker
passing; ``gated_quality = raw`` when the gates hold, else 0. Decision: gates
fail or raw < 0.65 → ``not_publishable``; raw < 0.80 →
``presentable_with_revisions``; else ``publishable``. The rubric reward is the
gated quality: it is reported beside the verifier's reward and never replaces it.

v0.1 checks have no weights: every check acts as a blocker (a ``fail`` closes
the gates) and the raw quality is the share of applicable checks that pass
(1.0 when none applies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .answer import Verdict

NOT_PUBLISHABLE_BELOW = 0.65
REVISIONS_BELOW = 0.80
PASS_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Quality:
    raw: float
    gated: float
    tests_passed: bool
    blockers_passed: bool
    decision: str
    failed_blockers: tuple[str, ...] = ()

    @property
    def gates(self) -> bool:
        return self.tests_passed and self.blockers_passed

    def record(self) -> dict[str, Any]:
        return {"raw_quality": round(self.raw, 6), "gated_quality": round(self.gated, 6),
                "gates": {"tests_passed": self.tests_passed, "blockers_passed": self.blockers_passed,
                          "failed_blockers": list(self.failed_blockers)},
                "decision": self.decision, "rubric_reward": round(self.gated, 6)}


def tests_passed(reward: float | None) -> bool:
    """The deterministic gate: the verifier's reward is 1."""
    return reward is not None and abs(reward - 1.0) <= PASS_TOLERANCE


def decide(raw: float, gates: bool) -> str:
    if not gates or raw < NOT_PUBLISHABLE_BELOW:
        return "not_publishable"
    if raw < REVISIONS_BELOW:
        return "presentable_with_revisions"
    return "publishable"


def aggregate(verdicts: list[Verdict], reward: float | None) -> Quality:
    """The quality, gates and decision of one review of a rollout whose verifier gave ``reward``."""
    scored = [v for v in verdicts if v.kind == "scored"]
    gating = [v for v in verdicts if v.kind in ("blocker", "check")]
    failed = tuple(v.name for v in gating if v.outcome == "fail")
    if scored:
        raw = sum(v.score * v.weight for v in scored) / sum(2 * v.weight for v in scored)
    else:
        applicable = [v for v in gating if v.outcome != "not_applicable"]
        raw = (sum(v.outcome == "pass" for v in applicable) / len(applicable)) if applicable else 1.0
    passed = tests_passed(reward)
    gates = passed and not failed
    return Quality(raw=raw, gated=raw if gates else 0.0, tests_passed=passed, blockers_passed=not failed,
                   decision=decide(raw, gates), failed_blockers=failed)
