"""``--health-summary-out``, ``--canonicalize``, ``--canonical-jobs-dir`` (contracts §7.6) over job folders."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from jsonschema import Draft202012Validator

from benchflow.errors import ConfigError
from benchflow.jobs import canonical
from benchflow.jobs.config_file import build_run_spec
from benchflow.records import schemas
from tests.fixtures.jobgen import TrialSpec, write_job
from tests.fixtures.train_jobs import rollout


@pytest.fixture
def job(tmp_path: Path) -> Path:
    return write_job(tmp_path / "jobs", "job-c", [
        rollout("alpha", 0.0, suffix="a0000001"),
        rollout("alpha", 1.0, suffix="a0000002", result={"n_tool_calls": 2}),
        rollout("alpha", 1.0, suffix="a0000003", result={"n_tool_calls": 5}),
        rollout("beta", None, suffix="b0000001", error="agent crashed", error_category="agent_crash"),
        rollout("beta", None, suffix="b0000002", llm_exchanges=[],
                files={"trajectory/llm_trajectory.jsonl": "{\"ok\": 1}\nnot json\n"}),
        TrialSpec(task="gamma", reward=0.5, suffix="c0000001",  # no model calls recorded (an oracle's)
                  result={"n_tool_calls": 0, "agent_result": None, "trajectory_summary": None}),
        rollout("delta", 1.0, suffix="d0000001", finished=False),
    ])


def _spec(**fields: object) -> SimpleNamespace:
    defaults = {"health_summary_out": None, "canonicalize": "none", "canonical_selection_out": None,
                "canonical_jobs_dir": None, "selection": SimpleNamespace(expected_tasks=None)}
    return SimpleNamespace(**{**defaults, **fields})


def test_health_summary_rows_and_counts(job: Path) -> None:
    health = canonical.health_summary(job)
    assert health["job_dir"] == str(job.resolve())
    assert [Path(r["rollout_dir"]).name for r in health["rows"]] == [
        "alpha__a0000001", "alpha__a0000002", "alpha__a0000003", "beta__b0000001", "beta__b0000002",
        "gamma__c0000001"], "the unfinished trial (no result.json) is no row"
    assert {k: health[k] for k in ("total_rows", "scored_rows", "unscored_rows", "rows_with_tool_calls",
                                   "zero_tool_rows", "missing_llm_trajectory", "malformed_llm_trajectory")} == {
        "total_rows": 6, "scored_rows": 4, "unscored_rows": 2, "rows_with_tool_calls": 5, "zero_tool_rows": 1,
        "missing_llm_trajectory": 1, "malformed_llm_trajectory": 1}
    crashed = health["rows"][3]
    assert crashed == {"task_id": "beta", "rollout_dir": crashed["rollout_dir"], "reward": None, "scored": False,
                       "tool_calls": 8, "has_llm_trajectory": True, "valid_llm_trajectory": True,
                       "llm_trajectory_rows": 3, "error": "agent crashed", "verifier_error": None,
                       "error_category": "agent_crash", "verifier_error_category": None}
    malformed = health["rows"][4]
    assert (malformed["has_llm_trajectory"], malformed["valid_llm_trajectory"], malformed["llm_trajectory_rows"]) \
        == (True, False, 0)


def test_one_healthy_per_task_ranks_scored_then_reward_then_tool_calls(job: Path) -> None:
    selection = canonical.canonical_selection(canonical.health_summary(job), "one-healthy-per-task")
    assert selection["policy"] == "one-healthy-per-task"
    assert (selection["selected_count"], selection["rejected_count"]) == (3, 3)
    picked = {r["task_id"]: Path(r["rollout_dir"]).name for r in selection["selected"]}
    assert picked == {"alpha": "alpha__a0000003", "beta": "beta__b0000001", "gamma": "gamma__c0000001"}
    assert {r["selection_reason"] for r in selection["selected"]} == {"best-scored-then-reward"}
    rejected = [(r["rejected_for_task_id"], Path(r["rollout_dir"]).name) for r in selection["rejected"]]
    assert rejected == [("alpha", "alpha__a0000002"), ("alpha", "alpha__a0000001"), ("beta", "beta__b0000002")]


def test_outputs_are_written_where_asked_and_the_selection_defaults_into_the_job(job: Path, tmp_path: Path) -> None:
    events: list[dict] = []
    spec = _spec(health_summary_out=str(tmp_path / "out" / "health.json"), canonicalize="one-healthy-per-task")
    assert canonical.write_outputs(spec, job, events.append) is None
    health = json.loads((tmp_path / "out" / "health.json").read_text())
    selection = json.loads((job / "canonical-selection.json").read_text())
    assert health["total_rows"] == 6 and selection["selected_count"] == 3
    Draft202012Validator(json.loads(schemas.shipped("health-summary"))).validate(health)
    Draft202012Validator(json.loads(schemas.shipped("canonical-selection"))).validate(selection)
    assert [e["what"] for e in events] == ["Health summary", "Canonical selection"]


def test_expected_tasks_differing_from_the_selection_is_a_reason_and_nothing_is_selected(job: Path,
                                                                                        tmp_path: Path) -> None:
    out = tmp_path / "selection.json"
    spec = _spec(canonicalize="one-healthy-per-task", canonical_selection_out=str(out),
                 selection=SimpleNamespace(expected_tasks=4))
    reason = canonical.write_outputs(spec, job, lambda _e: None)
    assert reason == "--expected-tasks 4: the canonical selection has 3 task(s); no selection written"
    assert not out.exists()


def test_canonical_jobs_dir_holds_the_selected_trials_and_is_one_job_folder(job: Path, tmp_path: Path) -> None:
    target = tmp_path / "canonical"
    spec = _spec(canonicalize="one-healthy-per-task", canonical_jobs_dir=str(target))
    canonical.write_outputs(spec, job, lambda _e: None)
    assert sorted(p.name for p in target.iterdir()) == [
        "alpha__a0000003", "beta__b0000001", "canonical-selection.json", "gamma__c0000001"]
    assert (target / "alpha__a0000003" / "trajectory" / "llm_trajectory.jsonl").read_bytes() == \
        (job / "alpha__a0000003" / "trajectory" / "llm_trajectory.jsonl").read_bytes()
    (job / "gamma__c0000001" / "result.json").unlink()  # a later run: gamma no longer finished
    canonical.write_outputs(spec, job, lambda _e: None)  # an earlier copy is replaced whole
    assert "gamma__c0000001" not in {p.name for p in target.iterdir()}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".canonical")], "no staging folder left"


def test_a_folder_that_is_not_an_earlier_copy_is_never_replaced(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="not an earlier canonical copy"):
        canonical.check_jobs_dir(mine)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        canonical.check_jobs_dir(tmp_path / "file")
    canonical.check_jobs_dir(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    canonical.check_jobs_dir(tmp_path / "empty")
    assert (mine / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("options, needle", [
    ({"canonical_selection_out": "s.json"}, "--canonical-selection-out needs --canonicalize one-healthy-per-task"),
    ({"canonical_jobs_dir": "c"}, "--canonical-jobs-dir needs --canonicalize one-healthy-per-task"),
    ({"canonicalize": "best-of"}, "canonicalize"),
])
def test_spec_refuses_outputs_without_a_policy_and_unknown_policies(options: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        build_run_spec(options=options, source="bf.run()")


def test_run_config_keys_reach_the_spec() -> None:
    spec = build_run_spec(options={"canonicalize": "one-healthy-per-task", "health_summary_out": "h.json",
                                   "canonical_selection_out": "s.json", "canonical_jobs_dir": "c"})
    assert (spec.canonicalize, spec.health_summary_out, spec.canonical_selection_out, spec.canonical_jobs_dir) == \
        ("one-healthy-per-task", "h.json", "s.json", "c")
