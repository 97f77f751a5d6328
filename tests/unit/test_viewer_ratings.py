"""Preference ratings near the jobs reach the viewer's overview (and so the page and --export)."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.jobgen import TrialSpec, write_job
from fixtures.preference_jobs import rated_job
from starlette.testclient import TestClient

from benchflow.viewer.app import create_app
from benchflow.viewer.sources import resolve_source


def test_overview_lists_a_stores_ratings_for_its_job(tmp_path: Path) -> None:
    rated_job(tmp_path)
    write_job(tmp_path, "job-b", [TrialSpec("t1")])
    client = TestClient(create_app(resolve_source(str(tmp_path))), base_url="http://127.0.0.1")
    (doc,) = client.get("/api/overview").json()["ratings"]
    assert doc["id"] == "job-a/preferences/ratings.v1.json" and doc["jobs"] == ["job-a"]
    assert doc["by"] == "agent+model" and doc["provisional"] is False
    names = {r["name"] for r in doc["tables"][0]["ratings"]}
    assert names == {"ann-agent/m", "bo-agent/m"}
    assert all(r["low"] <= r["rating"] <= r["high"] for r in doc["tables"][0]["ratings"])


def test_overview_skips_files_that_are_not_ratings(tmp_path: Path) -> None:
    job = write_job(tmp_path, "job-a", [TrialSpec("t1")])
    (job / "ratings.v1.json").write_text("{not json")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "ratings.v1.json").write_text(json.dumps({"kind": "something.else"}))
    client = TestClient(create_app(resolve_source(str(tmp_path))), base_url="http://127.0.0.1")
    assert client.get("/api/overview").json()["ratings"] == []
