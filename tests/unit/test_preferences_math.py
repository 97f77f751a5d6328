"""Bradley-Terry fit, Elo scale, raw agreement and the bootstrap cluster choice."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from benchflow.collector.records import Vote
from benchflow.preferences import bradley_terry as bt
from benchflow.preferences.agreement import agreement
from benchflow.preferences.rank import _cluster_for


def test_a_ten_to_one_record_is_about_400_points_apart() -> None:
    games = [("a", "b", 1.0)] * 1000 + [("a", "b", 0.0)] * 100
    elo = bt.to_elo(bt.fit(["a", "b"], games))
    assert math.isclose(elo["a"] - elo["b"], 400 * math.log10(10), abs_tol=5)
    assert math.isclose((elo["a"] + elo["b"]) / 2, 1500, abs_tol=1e-6)


def test_ties_pull_together_and_an_unbeaten_arm_stays_finite() -> None:
    tied = bt.to_elo(bt.fit(["a", "b"], [("a", "b", 0.5)] * 20))
    assert math.isclose(tied["a"], tied["b"], abs_tol=1e-6)
    unbeaten = bt.to_elo(bt.fit(["a", "b"], [("a", "b", 1.0)] * 20))
    assert math.isfinite(unbeaten["a"]) and unbeaten["a"] > unbeaten["b"] + 300


def test_weights_count_games_again() -> None:
    once = bt.fit_weighted(["a", "b"], [("a", "b", 1.0, 3.0), ("a", "b", 0.0, 1.0)])
    repeated = bt.fit(["a", "b"], [("a", "b", 1.0)] * 3 + [("a", "b", 0.0)])
    assert all(math.isclose(once[p], repeated[p], rel_tol=1e-5) for p in "ab")


def _vote(rater: str, left: str, right: str, choice: str, at: str = "2026-01-01T00:00:00Z") -> Vote:
    return Vote(vote_id=f"{rater}{left}{right}{at}", rater_id=rater, rater_kind="person", left_output=left,
                right_output=right, choice=choice, created_at=at)


def test_agreement_compares_outcomes_not_sides_and_ignores_skips() -> None:
    votes = [_vote("ann", "x", "y", "left"), _vote("bob", "y", "x", "right"), _vote("cy", "x", "y", "right"),
             _vote("dee", "x", "y", "skip")]
    found = agreement(votes)
    assert found.comparisons == 3 and math.isclose(found.raw, 1 / 3)
    assert found.raters["ann"]["agreement"] == 0.5 and found.raters["cy"]["agreement"] == 0.0
    assert "dee" not in found.raters


def test_a_raters_latest_answer_counts() -> None:
    votes = [_vote("ann", "x", "y", "right", "2026-01-01T00:00:00Z"), _vote("ann", "x", "y", "left", "2026-01-02T00:00:00Z"),
             _vote("bob", "x", "y", "left")]
    assert agreement(votes).raw == 1.0


def test_auto_cluster_follows_what_varies() -> None:
    def games(raters: str, tasks: str) -> list[dict]:
        return [{"rater": r, "task": t} for r in raters for t in tasks]

    assert _cluster_for("auto", games("ab", "xy")) == "rater+task"
    assert _cluster_for("auto", games("ab", "x")) == "rater"
    assert _cluster_for("auto", games("a", "xy")) == "task"
    assert _cluster_for("auto", games("a", "x")) == "vote"
    assert _cluster_for("task", games("ab", "xy")) == "task"


_GAMES = st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd"), st.sampled_from([0.0, 0.5, 1.0])),
                  min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(_GAMES, st.randoms(use_true_random=False))
def test_ratings_ignore_vote_order_and_which_side_was_shown(games, rnd) -> None:
    base = bt.to_elo(bt.fit("abcd", games))
    flipped = [(b, a, 1.0 - s) for a, b, s in games]
    rnd.shuffle(flipped)
    again = bt.to_elo(bt.fit("abcd", flipped))
    assert all(math.isclose(base[p], again[p], abs_tol=0.05) for p in "abcd")
    assert math.isclose(sum(base.values()) / 4, 1500, abs_tol=1e-6)
