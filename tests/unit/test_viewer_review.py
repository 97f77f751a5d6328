"""The viewer's trial document carries the current rubric revision (per-criterion verdicts) and the integrity flags."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.testclient import TestClient

from benchflow.viewer.app import create_app
from benchflow.viewer.sources import resolve_source
from tests.fixtures import reviewed_job


def _api(root: Path) -> TestClient:
    return TestClient(create_app(resolve_source(str(root))), base_url="http://127.0.0.1")


def test_trial_document_has_the_review_and_the_integrity_flags(tmp_path: Path) -> None:
    reviewed_job.write(tmp_path / "job")
    body = _api(tmp_path / "job").get("/api/trial", params={"id": "meh__00000002"}).json()
    review, integrity = body["review"]["review"], body["review"]["integrity"]
    assert body["summary"]["reward"] == 1.0
    assert (review["decision"], review["rubric_reward"], review["attempt"]) == ("presentable_with_revisions", 0.75, 1)
    assert {c["name"]: c.get("score", c.get("outcome")) for c in review["criteria"]} == {
        "no_cheating": "pass", "correctness": 2, "clarity": 1}
    assert integrity["verdict"] == "flagged"
    assert [(f["code"], f["command"]) for f in integrity["flags"]] == [("read_tests", "cat /tests/test_outputs.py")]


def test_the_current_revision_is_the_newest_and_a_plain_trial_has_none(tmp_path: Path) -> None:
    job = reviewed_job.write(tmp_path / "job")
    api = _api(tmp_path / "job")
    fail = api.get("/api/trial", params={"id": "fail__00000003"}).json()["review"]
    assert fail["review"]["attempt"] == 2 and fail["review"]["gates"]["tests_passed"] is False
    assert fail["integrity"] is None
    good = job.trial("good__00000001")
    for path in good.scoring_dir.iterdir():
        path.unlink()
    good.claim_verdict.unlink()
    data = json.loads(good.result.read_text())
    data.pop("scoring")
    good.result.write_text(json.dumps(data))
    assert api.get("/api/trial", params={"id": "good__00000001"}).json()["review"] is None
