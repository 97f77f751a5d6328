"""``bench preferences rank``: Bradley-Terry ratings from a store's votes, with bootstrap intervals.

The store is opened read-only. The raters asked for (people by default) are
rated together in the first table; every other kind of rater that voted gets
a table of its own. Intervals are the 2.5th and 97.5th percentiles over
``bootstrap`` resamples of the chosen cluster: single votes, whole raters,
whole tasks, or raters and tasks drawn independently (a vote then counts the
product of its rater's and its task's draws).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.collector import store as collector
from benchflow.collector.records import RATER_KINDS, Output, Pair, Vote, now
from benchflow.errors import BenchError, ConfigError
from benchflow.util.atomic import write_json

from . import bradley_terry as bt
from .agreement import agreement

RATINGS_NAME = "ratings.v1.json"
BY_CHOICES = ("agent", "model", "agent+model", "condition")
CLUSTERS = ("vote", "rater", "task", "rater+task", "auto")


class RatingsIncomplete(BenchError):
    """Some pair has no vote yet (or fewer raters than --raters-per-pair) and --provisional was not given."""

    category = "preferences_incomplete"


@dataclass(frozen=True)
class RankOptions:
    by: str = "agent+model"
    bootstrap: int = 1000
    seed: int = 0
    min_agreement: float | None = None
    raters_per_pair: int | None = None
    raters: tuple[str, ...] = ("person",)
    cluster: str = "auto"
    provisional: bool = False

    def check(self) -> None:
        if self.by not in BY_CHOICES:
            raise ConfigError(f"--by {self.by}: use one of {', '.join(BY_CHOICES)}")
        if self.cluster not in CLUSTERS:
            raise ConfigError(f"--cluster {self.cluster}: use one of {', '.join(CLUSTERS)}")
        if self.bootstrap < 0:
            raise ConfigError(f"--bootstrap {self.bootstrap}: give 0 (no intervals) or more resamples")
        if self.min_agreement is not None and not 0 <= self.min_agreement <= 1:
            raise ConfigError(f"--min-agreement {self.min_agreement}: give a fraction from 0 to 1")
        if self.raters_per_pair is not None and self.raters_per_pair < 1:
            raise ConfigError(f"--raters-per-pair {self.raters_per_pair}: give 1 or more")
        bad = [k for k in self.raters if k not in RATER_KINDS]
        if bad or not self.raters:
            raise ConfigError(f"--raters {','.join(self.raters)}: use person, guest, model, or several joined by commas")


def parse_raters(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ("person",)
    kinds = tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))
    return tuple({"people": "person", "persons": "person", "guests": "guest", "models": "model"}.get(k, k)
                 for k in kinds)


def arm(output: Output, by: str) -> str:
    """The name ``output`` is rated under for ``--by``."""
    parts = {"agent": [output.agent], "model": [output.model], "condition": [output.condition],
             "agent+model": [output.agent, output.model]}[by]
    return "/".join(p or "-" for p in parts)


def _cluster_for(asked: str, games: list[dict[str, Any]]) -> str:
    if asked != "auto":
        return asked
    many_raters = len({g["rater"] for g in games}) > 1
    many_tasks = len({g["task"] for g in games}) > 1
    return {(True, True): "rater+task", (True, False): "rater", (False, True): "task"}.get(
        (many_raters, many_tasks), "vote")


def _weights(games: list[dict[str, Any]], cluster: str, rng: random.Random) -> list[float]:
    def draw(key: str) -> Counter[str]:
        units = sorted({g[key] for g in games})
        return Counter(rng.choice(units) for _ in units)

    if cluster == "vote":
        counts = Counter(rng.randrange(len(games)) for _ in games)
        return [float(counts[i]) for i in range(len(games))]
    if cluster == "rater+task":
        r, t = draw("rater"), draw("task")
        return [float(r[g["rater"]] * t[g["task"]]) for g in games]
    key = {"rater": "rater", "task": "task"}[cluster]
    c = draw(key)
    return [float(c[g[key]]) for g in games]


def _table(votes: list[Vote], outs: dict[str, Output], kinds: tuple[str, ...], opts: RankOptions) -> dict[str, Any]:
    games: list[dict[str, Any]] = []
    tally: dict[str, Counter[str]] = {}
    skips = ties = 0
    for vote in votes:
        if vote.choice == "skip":
            skips += 1
            continue
        left, right = outs[vote.left_output], outs[vote.right_output]
        a, b = arm(left, opts.by), arm(right, opts.by)
        if a == b:
            continue
        score = {"left": 1.0, "right": 0.0, "tie": 0.5}[vote.choice]
        ties += vote.choice == "tie"
        games.append({"a": a, "b": b, "score": score, "rater": vote.rater_id, "task": left.task_id})
        for name, s in ((a, score), (b, 1.0 - score)):
            t = tally.setdefault(name, Counter())
            t["games"] += 1
            t["wins" if s == 1 else "losses" if s == 0 else "ties"] += 1
    players = sorted(tally)
    strength = bt.fit(players, ((g["a"], g["b"], g["score"]) for g in games))
    elo = bt.to_elo(strength)
    cluster = _cluster_for(opts.cluster, games)
    samples: dict[str, list[float]] = {p: [] for p in players}
    if opts.bootstrap and games:
        rng = random.Random(opts.seed)
        for _ in range(opts.bootstrap):
            weights = _weights(games, cluster, rng)
            fitted = bt.to_elo(bt.fit_weighted(
                players, ((g["a"], g["b"], g["score"], w) for g, w in zip(games, weights, strict=True)),
                start=strength))
            for p in players:
                samples[p].append(fitted[p])
    ratings = []
    for p in sorted(players, key=lambda p: -elo[p]):
        low = bt.percentile(samples[p], 0.025) if samples[p] else None
        high = bt.percentile(samples[p], 0.975) if samples[p] else None
        ratings.append({"name": p, "rating": round(elo[p], 1), "low": None if low is None else round(low, 1),
                        "high": None if high is None else round(high, 1), "games": tally[p]["games"],
                        "wins": tally[p]["wins"], "losses": tally[p]["losses"], "ties": tally[p]["ties"]})
    agree = agreement(votes)
    kind_of = {v.rater_id: v.rater_kind for v in votes}
    raters = []
    for rater, row in agree.raters.items():
        value = row["agreement"]
        below = opts.min_agreement is not None and value is not None and value < opts.min_agreement
        raters.append({"rater": rater, "kind": kind_of.get(rater), **row, "below": below})
    met = None if opts.min_agreement is None or agree.raw is None else agree.raw >= opts.min_agreement
    return {"raters": list(kinds), "cluster": cluster, "votes": len(votes), "skips": skips, "ties": ties,
            "games": len(games), "ratings": ratings,
            "agreement": {"raw": agree.raw, "comparisons": agree.comparisons, "min": opts.min_agreement,
                          "met": met, "raters": raters}}


def _coverage(pairs: list[Pair], votes: list[Vote], per_pair: int | None) -> dict[str, Any]:
    raters: dict[frozenset[str], set[str]] = {}
    for vote in votes:
        if vote.choice != "skip":
            raters.setdefault(frozenset((vote.left_output, vote.right_output)), set()).add(vote.rater_id)
    counts = [len(raters.get(frozenset((p.left_output, p.right_output)), ())) for p in pairs]
    want = per_pair or 1
    return {"total": len(pairs), "answered": sum(c > 0 for c in counts), "raters_per_pair": per_pair,
            "short": sum(c < want for c in counts)}


def rank(store_path: str | Path, opts: RankOptions, *, write: bool = True) -> dict[str, Any]:
    """The ratings document; written to ``<store>/ratings.v1.json`` atomically when ``write``.

    Raises:
        ConfigError: a bad option (exit 2).
        RatingsIncomplete: pairs still lack votes and ``opts.provisional`` is off (exit 1).
    """
    opts.check()
    conn = collector.open_readonly(store_path)
    try:
        outs, pairs, votes, meta = (collector.outputs(conn), collector.pairs(conn), collector.votes(conn),
                                    collector.read_meta(conn))
    finally:
        conn.close()
    chosen = [v for v in votes if v.rater_kind in opts.raters]
    coverage = _coverage(pairs, chosen, opts.raters_per_pair)
    complete = coverage["short"] == 0
    if not complete and not opts.provisional:
        need = f"{opts.raters_per_pair} rater(s)" if opts.raters_per_pair else "a vote"
        raise RatingsIncomplete(f"{coverage['short']} of {coverage['total']} pairs do not have {need} yet; "
                                "collect more votes, or pass --provisional to rank anyway")
    tables = [_table(chosen, outs, opts.raters, opts)]
    for kind in RATER_KINDS:
        theirs = [v for v in votes if v.rater_kind == kind]
        if kind not in opts.raters and theirs:
            tables.append(_table(theirs, outs, (kind,), opts))
    folder = collector.db_path(store_path).parent
    document = {"kind": "benchflow.ratings", "schema_version": 1, "created_at": now(), "store": str(folder.resolve()),
                "jobs": meta.get("jobs", "").splitlines(), "by": opts.by, "bootstrap": opts.bootstrap,
                "seed": opts.seed, "cluster": opts.cluster, "provisional": not complete, "complete": complete,
                "pairs": coverage, "tables": tables}
    if write:
        write_json(folder / RATINGS_NAME, document)
    return document
