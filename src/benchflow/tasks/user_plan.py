"""The simulated user a task declares (``user:`` and its persona), validated from the task document alone.

Kept in ``tasks/`` so that ``tasks.capability`` checks a task without importing the run engine;
``sim_user.user`` runs the user this plan describes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from benchflow.errors import TaskError

DEFAULT_ROUNDS = 3
_RULE = re.compile(r"^(?:(?P<both>satisfied-or-)?(?P<n>[1-9][0-9]*)-rounds?|(?P<only>satisfied))$")
_KEYS = frozenset({"model", "stop_rule", "private_facts", "script"})


@dataclass(frozen=True)
class UserPlan:
    """What the task asks of its simulated user, validated."""

    model: str
    persona: str
    max_rounds: int
    until_satisfied: bool
    private_facts: dict[str, Any] = field(default_factory=dict)
    script: list[str] = field(default_factory=list)

    @property
    def scripted(self) -> bool:
        return self.model == "scripted"


def user_plan(task: Any) -> UserPlan | None:
    """The task's simulated user, or None when it has none (no ``user:`` and no persona).

    Raises:
        TaskError: a ``user:`` key or stop rule this build does not know (names the fix).
    """
    if not task.has_user:
        return None
    persona = task.user_persona
    raw = dict(task.document.get("user") or {})
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise TaskError(f"task.md: user.{unknown[0]}: unknown key; use model, stop_rule, private_facts or script")
    rule = str(raw.get("stop_rule") or f"satisfied-or-{DEFAULT_ROUNDS}-rounds")
    match = _RULE.match(rule)
    if match is None:
        raise TaskError(f"task.md: user.stop_rule {rule!r}: use satisfied-or-N-rounds, N-rounds or satisfied")
    facts = raw.get("private_facts") or {}
    script = raw.get("script") or []
    if not isinstance(facts, dict) or not isinstance(script, list):
        raise TaskError("task.md: user.private_facts must be a mapping and user.script a list of lines")
    model = str(raw.get("model") or "scripted")
    return UserPlan(model=model, persona=persona or "", private_facts=facts, script=[str(s) for s in script],
                    max_rounds=int(match.group("n") or DEFAULT_ROUNDS),
                    until_satisfied=bool(match.group("both") or match.group("only")))
