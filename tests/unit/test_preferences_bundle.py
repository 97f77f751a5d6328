"""bench bundle carries a job's preference ratings and its trials' assessment sidecars."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from fixtures.preference_jobs import rated_job

from benchflow.jobs.layout import JobPaths
from benchflow.results.bundle import bundle


def test_bundle_includes_ratings_and_assessment_sidecars(tmp_path: Path) -> None:
    job, _store = rated_job(tmp_path)
    trial = JobPaths(job).trials()[0].root
    (trial / "assessment").mkdir()
    (trial / "assessment" / "log.jsonl").write_text('{"event": "created"}\n')
    report = bundle(job, tmp_path / "out.zip")
    names = set(zipfile.ZipFile(tmp_path / "out.zip").namelist())
    assert "job-a/preferences/ratings.v1.json" in names
    assert f"job-a/{trial.name}/assessment/log.jsonl" in names
    ratings = json.loads(zipfile.ZipFile(tmp_path / "out.zip").read("job-a/preferences/ratings.v1.json"))
    assert ratings["kind"] == "benchflow.ratings"
    assert any(f.path == "preferences/ratings.v1.json" for f in report.files)
