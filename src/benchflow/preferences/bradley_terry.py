"""Bradley-Terry ratings on the Elo scale, fitted by minorization-maximization (Hunter 2004).

A comparison is ``(winner, loser, weight)``; a tie counts as half a win to
each side (the convention of LMSYS-style arenas). Each player also plays one
virtual tie against an anchor of strength 1, a small prior that keeps a player
who never won (or never lost) at a finite rating and ties disconnected groups
to a common scale. Ratings are ``1500 + 400·log10(strength)`` re-centred so
they average 1500: a 400-point gap means 10:1 odds.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

ELO_BASE = 1500.0
ELO_SCALE = 400.0
PRIOR_GAMES = 1.0
"""Virtual games (all ties) each player plays against the anchor."""


def fit(players: Iterable[str], games: Iterable[tuple[str, str, float]], *,
        iterations: int = 10_000, tolerance: float = 1e-7) -> dict[str, float]:
    """Strengths (geometric mean 1) of ``players`` from weighted games ``(a, b, score_a)``.

    ``score_a`` is 1 when ``a`` won, 0.5 for a tie, 0 when ``b`` won; repeated
    games may be given once with a weight by repeating the tuple or via
    :func:`fit_weighted`.
    """
    return fit_weighted(players, ((a, b, s, 1.0) for a, b, s in games),
                        iterations=iterations, tolerance=tolerance)


def fit_weighted(players: Iterable[str], games: Iterable[tuple[str, str, float, float]], *,
                 iterations: int = 10_000, tolerance: float = 1e-7,
                 start: dict[str, float] | None = None) -> dict[str, float]:
    """As :func:`fit`, each game ``(a, b, score_a, weight)`` counted ``weight`` times.

    ``start`` (e.g. the full data's fit, for a bootstrap resample) only speeds convergence.
    """
    names = sorted(set(players))
    wins: dict[str, float] = {p: PRIOR_GAMES / 2 for p in names}
    counts: dict[tuple[str, str], float] = defaultdict(float)
    for a, b, score, weight in games:
        if a == b or weight <= 0:
            continue
        wins[a] += score * weight
        wins[b] += (1.0 - score) * weight
        key = (a, b) if a < b else (b, a)
        counts[key] += weight
    opponents: dict[str, list[tuple[str, float]]] = {p: [] for p in names}
    for (a, b), n in counts.items():
        opponents[a].append((b, n))
        opponents[b].append((a, n))
    strength = {p: (start or {}).get(p, 1.0) for p in names}
    for _ in range(iterations):
        new = {}
        for p in names:
            denom = PRIOR_GAMES / (strength[p] + 1.0)
            for q, n in opponents[p]:
                denom += n / (strength[p] + strength[q])
            new[p] = wins[p] / denom
        change = max((abs(math.log(new[p] / strength[p])) for p in names), default=0.0)
        strength = new
        if change < tolerance:
            break
    mean_log = sum(math.log(s) for s in strength.values()) / len(strength) if strength else 0.0
    return {p: math.exp(math.log(s) - mean_log) for p, s in strength.items()}


def to_elo(strength: dict[str, float]) -> dict[str, float]:
    """Strengths (geometric mean 1) as Elo ratings averaging 1500."""
    return {p: ELO_BASE + ELO_SCALE * math.log10(s) for p, s in strength.items()}


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values`` by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    pos = (len(ordered) - 1) * q
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)
