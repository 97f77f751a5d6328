"""``/api/outcomes`` (benchflow.outcomes/1): the Pareto, Outcomes and Training blocks the tabs draw."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import pytest
from fixtures.jobgen import TrialSpec, write_trial
from fixtures.viewer_jobs import XSS_TASK
from fixtures.viewer_pictures import PASS_RATES, TASKS, PictureJobs, make_picture_jobs
from starlette.testclient import TestClient

from benchflow.viewer.app import create_app
from benchflow.viewer.outcomes import wilson
from benchflow.viewer.pareto import SAMPLES, point_seed, task_interval
from benchflow.viewer.sources import resolve_source


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> PictureJobs:
    return make_picture_jobs(tmp_path_factory.mktemp("pictures"))


@pytest.fixture(scope="module")
def api(jobs: PictureJobs) -> TestClient:
    return TestClient(create_app(resolve_source(str(jobs.root))), base_url="http://127.0.0.1")


def by_label(points: list[dict], model: str) -> dict:
    return next(p for p in points if p["setting"]["model"] == model)


def test_bootstrap_matches_a_hand_computation_on_a_fixed_seed() -> None:
    rates = [0.0, 0.5, 1.0, 1.0, 0.25]
    rng = random.Random(42)
    means = sorted(sum(rates[rng.randrange(5)] for _ in range(5)) / 5 for _ in range(200))
    block = task_interval(rates, 42)
    assert (block["low"], block["high"]) == (means[4], means[194])  # the 2.5% and 97.5% of 200 sorted means
    assert (block["samples"], block["seed"], block["confidence"], block["tasks"]) == (200, 42, 0.95, 5)
    assert task_interval(rates, 42) == block  # a seed gives the same interval every time
    assert task_interval([0.5], 42) is None  # one task: no interval over tasks


def test_pareto_points_frontier_and_intervals(api: TestClient) -> None:
    doc = api.get("/api/outcomes", params={"id": ".", "part": "pareto"}).json()
    assert (doc["kind"], doc["schema_version"], "outcomes" in doc) == ("benchflow.outcomes", 1, False)
    pareto = doc["pareto"]
    points = pareto["points"]
    assert pareto["task_sets"] == ["fixture-bench@1.0"]
    for model, rate in PASS_RATES.items():
        point = by_label(points, model)
        assert point["pass_rate"] == rate and point["tasks"] == len(TASKS) and point["trials"] == 2 * len(TASKS)
        assert point["interval"]["low"] <= rate <= point["interval"]["high"]
        assert point["interval"]["samples"] == SAMPLES and point["seed"] == point_seed(point["setting"])
        # the bootstrap of this point's per-task solve rates (task-name order) with its own seed
        assert point["interval"] == task_interval(_task_rates(api, point), point["seed"])
    cheap, pricey, slow = (by_label(points, m) for m in ("cheap-model", "pricey-model", "slow-model"))
    assert (cheap["mean_cost_usd"], pricey["mean_cost_usd"], slow["mean_cost_usd"]) == (0.01, 0.05, 0.08)
    assert (cheap["mean_duration_sec"], slow["mean_duration_sec"]) == (20.0, 60.0)
    assert pareto["frontier"]["fixture-bench@1.0"] == {"cost": [cheap["id"], pricey["id"]],
                                                        "time": [cheap["id"], pricey["id"]]}
    assert slow["dominated"] == {"cost": True, "time": True} and cheap["dominated"] == {"cost": False, "time": False}
    oracle = next(p for p in points if p["control"] == "oracle")
    assert oracle["pass_rate"] == 1.0 and oracle["mean_cost_usd"] is None and oracle["dominated"]["time"] is None
    assert any("no trial recorded a cost" in note for note in oracle["notes"])
    (refused,) = pareto["refused"]
    assert refused["setting"]["model"] == "mixed-model" and "2 task sets" in refused["reason"]
    assert "other-bench@1.0" in refused["reason"]
    assert not any(p["setting"]["model"] == "mixed-model" for p in points)


def _task_rates(api: TestClient, point: dict) -> list[float]:
    """Per-task solve rates of a point, from the Outcomes block of its one job."""
    (job,) = point["jobs"]
    tasks = api.get("/api/outcomes", params={"id": job, "part": "outcomes"}).json()["outcomes"]["tasks"]
    return [t["rate"] for t in sorted(tasks, key=lambda t: t["task"])]


def test_outcomes_block_of_one_job(api: TestClient) -> None:
    out = api.get("/api/outcomes", params={"id": "acp-cheap", "part": "outcomes"}).json()["outcomes"]
    assert out["counts"] == {"passed": 4, "failed": 4, "errored": 0, "verifier_errored": 0, "unscored": 0}
    assert sum(sum(b["outcomes"].values()) for b in out["timeline"]["bins"]) == 8
    assert out["timeline"]["start"] == "2026-04-22 10:00:00" and out["timeline"]["bin_sec"] == 15
    hist = out["reward_histogram"]
    assert (hist["counts"][0], hist["counts"][-1], hist["scored"], hist["edges"][0], hist["edges"][-1]) == (4, 4, 8, 0.0, 1.0)
    rows = {t["task"]: t for t in out["tasks"]}
    assert set(rows) == set(TASKS) and out["tasks"][0]["rate"] == 0.0  # lowest first
    assert (rows["regex"]["n"], rows["regex"]["passed"], rows["regex"]["rate"]) == (2, 1, 0.5)
    assert rows["regex"]["low"] == pytest.approx(0.0945, abs=1e-4) and rows["regex"]["high"] == pytest.approx(0.9055, abs=1e-4)
    assert out["most_expensive"][0]["cost_usd"] == 0.01 and out["slowest"][0]["duration_sec"] == 20.0
    assert all(row["id"].startswith("acp-cheap/") for row in out["slowest"])


def test_wilson_interval() -> None:
    assert wilson(0, 0) == (None, None)
    low, high = wilson(1, 2)
    assert (round(low, 4), round(high, 4)) == (0.0945, 0.9055)
    low, high = wilson(10, 10)
    assert high == 1.0 and math.isclose(low, 0.7225, abs_tol=1e-4)


def test_training_block(api: TestClient) -> None:
    training = api.get("/api/outcomes", params={"id": "acp-cheap", "part": "training"}).json()["training"]
    summary = training["summary"]
    assert (summary["rollouts"], summary["training_grade"]) == (8, 7)
    assert summary["reasons"] == {"some call(s) without logprobs": 1}
    first = training["rollouts"][0]  # not training-grade first
    assert first["training_grade"] is False and first["reasons"] == ["1 call(s) without logprobs"]
    groups = {g["task"]: g for g in training["groups"]}
    assert groups["hello"]["has_variance"] is False and groups["regex"]["has_variance"] is True
    assert groups["regex"]["size"] == 2 and groups["regex"]["std"] == pytest.approx(math.sqrt(0.5))
    assert (summary["groups"], summary["groups_with_variance"], summary["groups_without_variance"]) == (4, 2, 2)


def test_bad_parameters(api: TestClient) -> None:
    assert api.get("/api/outcomes", params={"part": "nope"}).status_code == 400
    missing = api.get("/api/outcomes", params={"id": "../elsewhere"})
    assert missing.status_code == 404 and "not found" in missing.json()["error"]


def test_markup_in_task_names_is_data(api: TestClient) -> None:
    raw = api.get("/api/outcomes", params={"id": "acp-cheap", "part": "outcomes"}).text
    assert XSS_TASK in {t["task"] for t in json.loads(raw)["outcomes"]["tasks"]}
    assert api.get("/api/outcomes").headers["content-type"].startswith("application/json")


def test_a_new_trial_is_seen(tmp_path: Path, jobs: PictureJobs) -> None:
    folder = tmp_path / "jobs"
    shutil.copytree(jobs.root / "acp-pricey", folder / "acp-pricey")
    client = TestClient(create_app(resolve_source(str(folder))), base_url="http://127.0.0.1")
    before = client.get("/api/outcomes", params={"part": "outcomes"}).json()["outcomes"]["finished"]
    write_trial(folder / "acp-pricey", TrialSpec(task="late-task", reward=1.0, agent="fake-acp", model="pricey-model"))
    after = client.get("/api/outcomes", params={"part": "outcomes"}).json()["outcomes"]["finished"]
    assert (before, after) == (8, 9)
