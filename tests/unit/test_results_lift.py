"""compare-lift: one healthy rollout per task, paired bootstrap with a fixed seed."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.jobgen import TrialSpec, write_job

from benchflow.results.lift import (
    DuplicateRollouts,
    bootstrap_interval,
    compare_lift,
    markdown,
    write_reports,
)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    base = write_job(tmp_path, "base", [TrialSpec("a", 0.0), TrialSpec("b", 1.0), TrialSpec("c", 0.0),
                                        TrialSpec("d", None, error="boom"), TrialSpec("e", 0.5)])
    trained = write_job(tmp_path, "trained", [TrialSpec("a", 1.0), TrialSpec("b", 1.0), TrialSpec("c", 1.0),
                                              TrialSpec("d", 1.0), TrialSpec("e", 1.0, result={"partial_trajectory": True})])
    return base, trained


def test_paired_figures(pair):
    report = compare_lift(*pair, samples=200, seed=7)
    assert report["paired_count"] == 3  # d unhealthy on base, e partial on trained
    assert report["pass_rate_base"] == pytest.approx(1 / 3) and report["pass_rate_trained"] == 1.0
    assert report["pass_rate_delta"] == pytest.approx(2 / 3)
    assert report["coverage"]["baseline"]["excluded"] == {"error": 1}
    assert report["coverage"]["trained"]["excluded"] == {"partial_trajectory": 1}
    assert report["baseline_only_healthy_tasks"] == ["e"] and report["trained_only_healthy_tasks"] == ["d"]
    ci = report["pass_rate_delta_ci"]
    assert ci["method"] == "paired_nonparametric_bootstrap" and ci["low"] <= report["pass_rate_delta"] <= ci["high"]
    assert compare_lift(*pair, samples=200, seed=7) == report


def test_bootstrap_is_deterministic_and_degenerate_cases():
    deltas = [1.0, 0.0, 1.0, -1.0, 1.0]
    first = bootstrap_interval(deltas, 500, 3)
    assert first == bootstrap_interval(deltas, 500, 3)
    assert first["low"] < 0.4 < first["high"]
    assert bootstrap_interval([0.5], 100, 0)["low"] == 0.5
    assert bootstrap_interval(deltas, 0, 0)["high"] == pytest.approx(0.4)


def test_duplicates_refused_unless_allowed(tmp_path):
    base = write_job(tmp_path, "base", [TrialSpec("a", 0.0, suffix="00000001"), TrialSpec("a", 1.0, suffix="00000002")])
    trained = write_job(tmp_path, "trained", [TrialSpec("a", 1.0)])
    with pytest.raises(DuplicateRollouts):
        compare_lift(base, trained)
    report = compare_lift(base, trained, allow_duplicates=True)
    assert report["tasks"][0]["reward_base"] == 0.0  # first by path


def test_reports_written(pair, tmp_path):
    report = compare_lift(*pair)
    write_reports(report, tmp_path / "lift.md", tmp_path / "lift.json")
    text = (tmp_path / "lift.md").read_text()
    assert "| pass rate | 33.3% | 100.0% | +0.667 |" in text and text == markdown(report)
    assert (tmp_path / "lift.json").read_text().startswith("{")
