"""bench results / bench eval inspect show a trial's rubric review and integrity verdict beside the unchanged reward."""

from __future__ import annotations

import json

from benchflow.results import render
from benchflow.results.views import inspect_path, results_for
from tests.fixtures import reviewed_job


def _row(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(name))


def test_the_job_table_gets_a_review_column(tmp_path) -> None:
    job = reviewed_job.write(tmp_path / "job")
    text = render.render_job(results_for([job.root]))
    header = next(line for line in text.splitlines() if line.startswith("trial"))
    assert header.split()[-1] == "review"
    assert _row(text, "good__00000001").endswith("publishable 1.00 · clean")
    assert _row(text, "meh__00000002").endswith("presentable_with_revisions 0.75 · flagged: read_tests")
    fail = _row(text, "fail__00000003")
    assert fail.endswith("not_publishable 0.00") and " 0.00 " in fail  # the verifier's reward stays 0


def test_a_job_without_reviews_keeps_its_columns(tmp_path) -> None:
    job = reviewed_job.write(tmp_path / "job")
    for trial in job.trials():
        data = json.loads(trial.result.read_text())
        data.pop("scoring")
        trial.result.write_text(json.dumps(data))
        trial.claim_verdict.unlink(missing_ok=True)
    text = render.render_job(results_for([job.root]))
    assert "review" not in next(line for line in text.splitlines() if line.startswith("trial"))


def test_inspect_of_a_trial_prints_review_and_integrity_lines(tmp_path) -> None:
    job = reviewed_job.write(tmp_path / "job")
    doc = inspect_path(job.trial("meh__00000002").root)
    text = render.render_trial(doc)
    assert "reward: 1.000" in text
    assert ("review: presentable_with_revisions 0.75  (scoring/1.json; the reward above is the verifier's, "
            "unchanged)") in text
    assert "integrity: flagged: read_tests  (integrity/claim_verdict.json)" in text
    assert doc.summary.review["current"] == "scoring/1.json" and doc.summary.integrity["verdict"] == "flagged"
    fail = inspect_path(job.trial("fail__00000003").root).summary
    assert fail.reward == 0.0 and fail.review["attempt"] == 2 and fail.integrity is None


def test_json_carries_both_blocks_and_an_unreadable_verdict_is_left_out(tmp_path) -> None:
    job = reviewed_job.write(tmp_path / "job")
    job.trial("good__00000001").claim_verdict.write_text("{not json")
    doc = json.loads(render.to_json(results_for([job.root])))
    by_name = {t["name"]: t for t in doc["trials"]}
    assert by_name["good__00000001"]["integrity"] is None
    assert by_name["good__00000001"]["review"]["decision"] == "publishable"
    assert by_name["meh__00000002"]["integrity"]["flag_codes"] == ["read_tests"]


def test_eval_metrics_reports_rubric_reward_bands_and_integrity_beside_the_solve_rate(tmp_path) -> None:
    from benchflow.results.report import collect_metrics

    reviewed_job.write(tmp_path / "jobs" / "job")
    report = collect_metrics(tmp_path / "jobs")
    review, integrity = report.pooled.review, report.pooled.integrity
    assert review["reviewed"] == review["completed"] == 3 and review["reviewer_errors"] == 0
    assert review["mean_rubric_reward"] == (1.0 + 0.75 + 0.0) / 3
    assert review["bands"] == {"0.00-0.65": 1, "0.65-0.80": 1, "0.80-1.00": 1}
    assert review["decisions"] == {"not_publishable": 1, "presentable_with_revisions": 1, "publishable": 1}
    assert integrity == {"audited": 2, "clean": 1, "flagged": 1, "flag_codes": {"read_tests": 1}}
    text = render.render_metrics(report)
    assert "Rubric review: 3/3 reviewed, mean rubric reward 0.58" in text
    assert "Integrity: 2 audited, 1 clean, 1 flagged (read_tests 1)" in text
    assert report.pooled.denominators["passed"] == 2  # the verifier's figures are unchanged by the review
