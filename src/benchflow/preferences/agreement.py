"""Raw agreement between raters (not kappa): how often two raters of one pair gave the same answer.

Answers are compared by outcome, not by side: "left" on a pair shown one way
and "right" on the same outputs shown the other way agree. Skips are left
out; a rater's latest answer on a pair counts. A rater's own agreement is over
every other rater of the pairs they answered, so a rater who disagrees with
everyone stands out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from benchflow.collector.records import Vote


def outcome(vote: Vote) -> tuple[frozenset[str], str | None] | None:
    """``(the two outputs, the winner or None for a tie)``; None for a skip."""
    if vote.choice == "skip":
        return None
    key = frozenset((vote.left_output, vote.right_output))
    winner = {"left": vote.left_output, "right": vote.right_output}.get(vote.choice)
    return key, winner


@dataclass
class Agreement:
    raw: float | None
    """Agreeing rater pairs / rater pairs over every pair answered by two or more raters."""
    comparisons: int
    raters: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    """Per rater: ``agreement`` (None without another rater), ``comparisons``, ``votes``."""


def agreement(votes: list[Vote]) -> Agreement:
    latest: dict[frozenset[str], dict[str, str | None]] = defaultdict(dict)
    answered: dict[str, int] = defaultdict(int)
    for vote in sorted(votes, key=lambda v: v.created_at):
        found = outcome(vote)
        if found is None:
            continue
        key, winner = found
        latest[key][vote.rater_id] = winner
    agree: dict[str, int] = defaultdict(int)
    seen: dict[str, int] = defaultdict(int)
    total = same = 0
    for answers in latest.values():
        for rater in answers:
            answered[rater] += 1
        for (r1, w1), (r2, w2) in combinations(sorted(answers.items()), 2):
            hit = int(w1 == w2)
            total += 1
            same += hit
            for r in (r1, r2):
                seen[r] += 1
                agree[r] += hit
    raters = {r: {"agreement": (agree[r] / seen[r]) if seen[r] else None, "comparisons": seen[r],
                  "votes": answered[r]} for r in sorted(answered)}
    return Agreement(raw=(same / total) if total else None, comparisons=total, raters=raters)
