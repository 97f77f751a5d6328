"""The review's files validate against their record models and shipped schemas; result.json's scoring block reads."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from benchflow.records import (
    ClaimVerdict,
    ReviewReport,
    ScoringRevision,
    TrialResult,
    read_record,
    schemas,
)
from benchflow.results.review import revisions
from benchflow.review import integrity
from tests.fixtures import reviewed_job


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schemas.shipped(name)))


def test_written_revisions_verdicts_and_reports_validate(tmp_path) -> None:
    job = reviewed_job.write(tmp_path / "job")
    for trial in job.trials():
        for _, path in revisions(trial):
            data = json.loads(path.read_text())
            _validator("scoring-revision").validate(data)
            assert ScoringRevision.model_validate(data).attempt == int(path.stem)
        verdict = integrity.read_verdict(trial)
        if verdict is not None:
            _validator("claim-verdict").validate(verdict)
            assert ClaimVerdict.model_validate(verdict).rewards_changed is False
        _validator("result").validate(json.loads(trial.result.read_text()))
    meh = job.trial("meh__00000002")
    report = reviewed_job.report(meh, 1.0, json.dumps({"no_cheating": {"outcome": "pass", "explanation": "e"},
                                                       "correctness": {"score": 2, "explanation": "e"},
                                                       "clarity": {"score": 1, "explanation": "e"}}))
    _validator("review-report").validate(report)
    assert ReviewReport.model_validate(report).decision == "presentable_with_revisions"


def test_result_json_names_the_current_revision_beside_the_unchanged_reward(tmp_path) -> None:
    job = reviewed_job.write(tmp_path / "job")
    fail = job.trial("fail__00000003")
    result = read_record(TrialResult, fail.result, name=fail.name)
    assert result.reward == 0.0
    assert result.scoring is not None and result.scoring.current == "scoring/2.json"
    assert fail.scoring_revision(2).is_file() and result.scoring.attempt == 2
    # the second review completed: the tests failed, so the rubric reward is gated to 0
    assert result.scoring.status == "completed" and result.scoring.rubric_reward == 0.0
    assert result.scoring.decision == "not_publishable"
    first = ScoringRevision.model_validate_json(fail.scoring_revision(1).read_text())
    assert first.status == "reviewer_error" and first.rubric_reward is None and first.error.category == "no_answer"


def test_a_verdict_with_an_unknown_decision_is_refused() -> None:
    with pytest.raises(Exception, match="decision"):
        ScoringRevision.model_validate({"schema_version": 1, "attempt": 1, "status": "completed",
                                        "decision": "great", "rubric": {}, "reviewer": {}})
