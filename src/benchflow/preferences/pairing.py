"""Blind pairs: two outputs of one task version from different arms (agent, model or condition).

Candidates are listed in a fixed order (by task, then source path), so a seed
alone decides which are kept (``per_task``), their order and their sides.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import combinations

from .outputs import Found


@dataclass(frozen=True)
class Planned:
    left: int
    right: int
    swapped: bool


def plan_pairs(outputs: list[Found], rng: random.Random, *, per_task: int | None = None,
               keep_sides: bool = False, golden: str = "side") -> list[Planned]:
    """Pairs over indexes into ``outputs``; goldens take part only with ``golden="side"``."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, out in enumerate(outputs):
        if out.kind == "golden" and golden != "side":
            continue
        groups.setdefault((out.task_id, out.task_version), []).append(i)
    by_task: dict[str, list[tuple[int, int]]] = {}
    for (task, _version), members in sorted(groups.items()):
        members.sort(key=lambda i: str(outputs[i].source))
        for a, b in combinations(members, 2):
            if outputs[a].arm != outputs[b].arm:
                by_task.setdefault(task, []).append((a, b))
    chosen: list[tuple[int, int]] = []
    for task in sorted(by_task):
        candidates = by_task[task]
        if per_task is not None and len(candidates) > per_task:
            candidates = rng.sample(candidates, per_task)
        chosen.extend(candidates)
    rng.shuffle(chosen)
    planned = []
    for a, b in chosen:
        swap = not keep_sides and rng.random() < 0.5
        planned.append(Planned(b, a, True) if swap else Planned(a, b, False))
    return planned
