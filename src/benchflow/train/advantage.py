"""Group advantages (contracts §4.8) and the ``--group-by`` key.

- ``grpo``: (r − mean) / (std + 1e-4), std the *sample* standard deviation
  (n − 1); a group of one has std 0, so its advantage is 0.
- ``loo``: r − the mean of the others; a group of one has no others: null.

Only scored rollouts (a reward, not null) enter a group's statistics, and an
unscored rollout's advantage is null, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Protocol

from benchflow.errors import UserError

METHODS = ("grpo", "loo")
GROUP_FIELDS = ("task", "agent", "model", "task_digest", "job")
DEFAULT_GROUP_BY = ("task", "agent", "model", "job")
EPSILON = 1e-4


class Keyed(Protocol):
    reward: float | None

    def key(self, field: str) -> str: ...


def parse_group_by(text: str | None) -> tuple[str, ...]:
    """``task,agent,...`` as a tuple; raises UserError naming a field not in :data:`GROUP_FIELDS`."""
    if text is None or not text.strip():
        return DEFAULT_GROUP_BY
    fields = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [f for f in fields if f not in GROUP_FIELDS]
    if unknown:
        raise UserError(f"--group-by: unknown field {unknown[0]!r}; use a comma-separated list of "
                        + ", ".join(GROUP_FIELDS))
    return fields


def group_id(item: Keyed, fields: tuple[str, ...]) -> str:
    """``field=value|field=value`` in ``fields`` order."""
    return "|".join(f"{field}={item.key(field)}" for field in fields)


def advantages(rewards: Iterable[float | None], method: str) -> list[float | None]:
    """The advantage of each reward of one group, in order."""
    values = list(rewards)
    scored = [r for r in values if r is not None]
    n = len(scored)
    if method == "grpo":
        mean = sum(scored) / n if n else 0.0
        std = math.sqrt(sum((r - mean) ** 2 for r in scored) / (n - 1)) if n > 1 else 0.0
        return [None if r is None else (r - mean) / (std + EPSILON) for r in values]
    if method == "loo":
        total = sum(scored)
        return [None if r is None or n < 2 else r - (total - r) / (n - 1) for r in values]
    raise UserError(f"--group-advantage: unknown method {method!r}; use grpo or loo")


def by_group(items: list[Keyed], fields: tuple[str, ...], method: str) -> dict[int, tuple[str, float | None]]:
    """id(item) -> (group id, advantage) for every item."""
    groups: dict[str, list[Keyed]] = {}
    for item in items:
        groups.setdefault(group_id(item, fields), []).append(item)
    out: dict[int, tuple[str, float | None]] = {}
    for gid, members in groups.items():
        for member, value in zip(members, advantages([m.reward for m in members], method), strict=True):
            out[id(member)] = (gid, value)
    return out
