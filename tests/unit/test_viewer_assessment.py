"""``bench view``: a trial's blind-assessment sidecar shows as its label and whether the log verifies."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from benchflow.viewer.app import create_app
from benchflow.viewer.sources import resolve_source
from tests.assessgen import make_kit
from tests.conftest import run_bench


def test_trial_document_carries_the_assessment_label_and_a_tampered_log_is_not_verified(tmp_path: Path) -> None:
    kit = make_kit(tmp_path / "job")
    made = run_bench("assess", "create", str(kit.sidecar), *kit.create_args())
    assert made.returncode == 0, made.stderr
    api = TestClient(create_app(resolve_source(str(tmp_path / "job"))), base_url="http://127.0.0.1")
    body = api.get("/api/trial", params={"id": "hello__aaaa"}).json()
    assessment = body["human_assessment"]
    assert assessment["verified"] and assessment["label"]["state"] == "pending"
    assert assessment["summary"].startswith("hello: label pending")
    assert body["summary"]["reward"] == 1.0  # the assessment never changes the reward
    assert api.get("/api/trial", params={"id": "hello__bbbb"}).json()["human_assessment"] is None

    log = kit.sidecar / "events.jsonl"
    log.write_bytes(log.read_bytes().replace(b"clarity", b"clarify", 1))
    tampered = api.get("/api/trial", params={"id": "hello__aaaa"}).json()["human_assessment"]
    assert tampered["verified"] is False and tampered["failures"]
