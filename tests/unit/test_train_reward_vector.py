"""``bench train convert --reward-vector`` over job folders with rubric-reviewed and plain trials.

The reviews are written by the review's own writers (``benchflow.review``: report, revisions), so the
vectors are read from what a ``--reviewer-*`` run or ``bench eval score`` leaves in a trial folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchflow.errors import UserError
from benchflow.jobs.layout import JobPaths, TrialPaths
from benchflow.review import revisions
from benchflow.review.rubric import parse_rubric
from benchflow.train.convert import ConvertOptions, convert
from benchflow.train.reward_vector import RUBRIC_FORMULA, VERIFIER_FORMULA
from tests.fixtures.jobgen import write_job
from tests.fixtures.reviewed_job import RUBRIC, _answer, report
from tests.fixtures.train_jobs import rollout

CHECKS = parse_rubric({"criteria": [
    {"name": "ran_tests", "guidance": "pass if the tests were run"},
    {"name": "docs_updated", "guidance": "pass if the docs changed; n/a when there are none"},
]}, "checks.json")


def _review(trial: TrialPaths, reward: float | None, answer: str | None, rubric=RUBRIC) -> None:
    """A review of ``trial`` as the run's reviewer records it (``rubric`` other than RUBRIC: a v0.1 one)."""
    if rubric is RUBRIC:
        revisions.add_revision(trial, report(trial, reward, answer), trigger="run")
        return
    from benchflow.review.answer import parse_answer
    from benchflow.review.report import build_report
    from benchflow.review.scoring import aggregate

    verdicts = parse_answer(answer, rubric)
    outcome = {"status": "completed", "criteria": [v.record() for v in verdicts],
               **aggregate(verdicts, reward).record()}
    reviewed = {"trial_name": trial.name, "task_name": trial.name.split("__")[0], "reward": reward,
                "path": str(trial.root)}
    revisions.add_revision(trial, build_report(reviewed=reviewed, rubric=rubric, reviewer={}, evidence={},
                                               outcome=outcome, reviewer_trial=None), trigger="run")


@pytest.fixture
def job(tmp_path: Path) -> JobPaths:
    root = write_job(tmp_path / "jobs", "job-r", [
        rollout("good", 1.0, suffix="a0000001"),
        rollout("failing", 0.0, suffix="b0000001"),
        rollout("checked", 1.0, suffix="c0000001"),
        rollout("broken", 1.0, suffix="d0000001"),
        rollout("lost", 1.0, suffix="e0000001"),
        rollout("plain", 0.5, suffix="f0000001", result={"rewards": {
            "reward": 0.5, "accuracy": 0.25, "label": "partial", "strict": True,
            "metrics": {"task_success": 1, "steps": 7, "note": "x"}}}),
        rollout("unscored", None, suffix="g0000001"),
    ])
    paths = JobPaths(root)
    _review(paths.trial("good__a0000001"), 1.0, _answer(2, 1))
    _review(paths.trial("failing__b0000001"), 0.0, _answer(1, 0, cheat="fail"))
    _review(paths.trial("checked__c0000001"), 1.0, json.dumps({
        "ran_tests": {"outcome": "pass", "explanation": "ran"},
        "docs_updated": {"outcome": "not_applicable", "explanation": "no docs"}}), rubric=CHECKS)
    _review(paths.trial("broken__d0000001"), 1.0, None)  # the reviewer gave no answer: reviewer_error
    _review(paths.trial("lost__e0000001"), 1.0, _answer(2, 2))
    (paths.trial("lost__e0000001").root / "scoring" / "1.json").unlink()
    return paths


def _vectors(job: JobPaths, tmp_path: Path, fmt: str = "prime-sft") -> dict[str, object]:
    out = tmp_path / f"rows-{fmt}.jsonl"
    convert(ConvertOptions(source=job.root.parent, out=out, format=fmt, reward_vector=True))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    key = "task_name" if fmt == "prime-sft" else "task_id"
    assert all("reward_vector" in row for row in rows), "every row gets the key, null included"
    return {row[key]: row["reward_vector"] for row in rows}


def test_rubric_scored_trials_give_the_gate_and_each_criterion(job: JobPaths, tmp_path: Path) -> None:
    vectors = _vectors(job, tmp_path)
    assert vectors["good"] == {
        "source": "rubric", "names": ["tests", "no_cheating", "correctness", "clarity"],
        "kinds": ["gate", "blocker", "scored", "scored"], "weights": [None, None, 5, 5],
        "values": [1.0, 1.0, 1.0, 0.5], "formula": RUBRIC_FORMULA, "revision": "scoring/1.json",
        "rubric_sha256": RUBRIC.sha256}
    # A failed blocker is 0 and the failed test gate is the verifier's 0: the components, not the gated reward.
    assert vectors["failing"]["values"] == [0.0, 0.0, 0.5, 0.0]


def test_a_v0_1_check_is_legacy_and_not_applicable_is_null_not_zero(job: JobPaths, tmp_path: Path) -> None:
    vector = _vectors(job, tmp_path)["checked"]
    assert vector["names"] == ["tests", "ran_tests", "docs_updated"]
    assert vector["kinds"] == ["gate", "legacy", "legacy"]
    assert vector["weights"] == [None, None, None]
    assert vector["values"] == [1.0, 1.0, None]


def test_plain_trials_give_every_numeric_verifier_key_reward_first(job: JobPaths, tmp_path: Path) -> None:
    vectors = _vectors(job, tmp_path, fmt="trl-sft")
    assert vectors["plain"] == {
        "source": "verifier", "names": ["reward", "accuracy", "metrics.task_success", "metrics.steps"],
        "kinds": ["verifier"] * 4, "weights": [None] * 4, "values": [0.5, 0.25, 1.0, 7.0],
        "formula": VERIFIER_FORMULA}
    # A review that failed (no verdict) does not make a trial rubric-scored: its verifier keys are used.
    assert vectors["broken"]["source"] == "verifier" and vectors["broken"]["values"] == [1.0]


def test_unscored_rollouts_get_null(job: JobPaths, tmp_path: Path) -> None:
    assert _vectors(job, tmp_path)["unscored"] is None


def test_a_missing_revision_file_falls_back_to_the_scoring_block_and_says_so(job: JobPaths, tmp_path: Path) -> None:
    vector = _vectors(job, tmp_path)["lost"]
    assert vector["source"] == "scoring"
    assert vector["names"] == ["tests", "rubric_reward"] and vector["values"] == [1.0, 1.0]
    assert "scoring/1.json" in vector["note"]


def test_a_revision_path_outside_the_trial_is_not_read(job: JobPaths, tmp_path: Path) -> None:
    trial = job.trial("good__a0000001")
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text((trial.root / "scoring" / "1.json").read_text())
    result = json.loads(trial.result.read_text())
    result["scoring"]["current"] = "../../../elsewhere.json"
    trial.result.write_text(json.dumps(result))
    assert _vectors(job, tmp_path)["good"]["source"] == "scoring"


def test_reward_vector_is_refused_where_the_format_has_no_such_column(job: JobPaths, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--reward-vector: --format branch-tree"):
        convert(ConvertOptions(source=job.root, out=tmp_path / "x.jsonl", format="branch-tree", reward_vector=True))
