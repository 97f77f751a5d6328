"""The typed records: folders written before the models and by BenchFlow 0.7 load; round trip; shipped schemas."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import benchflow as bf
from benchflow.agents.base import AgentOutcome
from benchflow.jobs.job import scan_finished
from benchflow.jobs.layout import JobPaths
from benchflow.jobs.result_record import build_result
from benchflow.jobs.summary import build_summary
from benchflow.records import (
    SCHEMA_VERSION,
    EvaluationRecord,
    JobSummary,
    RunCardRecord,
    TrialConfig,
    TrialResult,
    TrialTiming,
    Unreadable,
    read_record,
    upgrade,
    write_record,
)
from benchflow.records import schemas
from benchflow.verify.runner import VerifierOutcome

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records"
BEFORE = FIXTURES / "job-before-models"
"""Written by `bench run` (oracle, then nop) with the engine as it was before the models."""
OLD = FIXTURES / "job-0.7" / "2026-04-22__22-37-42"
"""A BenchFlow 0.7 job folder as the contracts describe it (§3.1–3.3, §3.6): no schema_version anywhere."""

JOB_RECORDS = {"summary.json": JobSummary, "evaluation.json": EvaluationRecord, "run-card.json": RunCardRecord}


def raw(path: Path) -> dict:
    return json.loads(path.read_text())


def same_plus_null_fields(written: dict, on_disk: dict) -> bool:
    """Every key on disk reads back as it was; fields added to the model since read as null."""
    return ({key: written[key] for key in on_disk} == on_disk
            and all(written[key] is None for key in set(written) - set(on_disk)))


def test_a_job_written_before_the_models_reads_back_unchanged():
    for trial in JobPaths(BEFORE).trials():
        config = read_record(TrialConfig, trial.config)
        assert same_plus_null_fields(config.to_json(), raw(trial.config))
        timing = read_record(TrialTiming, trial.timing)
        assert timing.model_dump(mode="json") == raw(trial.timing)
        result = read_record(TrialResult, trial.result, name=trial.name)
        assert same_plus_null_fields(result.to_json(), raw(trial.result))
    for name, model in JOB_RECORDS.items():
        assert same_plus_null_fields(read_record(model, BEFORE / name).to_json(), raw(BEFORE / name))
    doc = bf.load_job(BEFORE)
    assert {t.task_name: t.outcome for t in doc.trials} == {"reward-pass": "passed", "reward-fail": "failed"}
    assert not doc.notes


def test_a_0_7_job_reads_into_the_current_model():
    regex = read_record(TrialResult, OLD / "regex-log__bab1cbf6" / "result.json", name="regex-log__bab1cbf6")
    assert regex.schema_version == SCHEMA_VERSION and regex.reward == 0.0
    assert regex.rollout_name == regex.trial_name == "regex-log__bab1cbf6"
    assert (regex.agent, regex.agent_name) == ("gemini", "gemini-cli")  # 0.7 wrote two names: both kept
    extra = regex.model_extra
    assert extra["skill_mode"] == "no-skill" and extra["usage_tracking"]["status"] == "tracked"
    assert regex.loop == {"mode": "single"} and extra["dataset_name"] == "terminal-bench"  # 0.7's loop block, kept
    fixed = read_record(TrialResult, OLD / "fix-bug__0a1b2c3d" / "result.json")
    assert fixed.agent_result.total_tokens == 1250  # 0.7 record without the total: summed from its parts
    config = read_record(TrialConfig, OLD / "regex-log__bab1cbf6" / "config.json")
    assert config.task_name == "regex-log" and config.environment == "docker"
    assert config.model_extra["acp_transport"] == "stdio"
    summary = read_record(JobSummary, OLD / "summary.json")
    assert (summary.passed, summary.pass_, summary.model_extra["idle_timeout"]) == (1, 1, 1)
    assert summary.to_json()["pass"] == 1


def test_a_0_7_job_loads_and_resumes_by_the_finished_rule(tmp_path):
    doc = bf.load_job(OLD)
    trials = {t.task_name: t for t in doc.trials}
    assert trials["idle-task"].error_category == "idle_timeout"  # classified from the message (0.7 stored none)
    assert trials["verify-crash"].outcome == "verifier_errored" and trials["killed"].finished is False
    assert doc.settings["agent"] == "gemini" and doc.settings["sandbox"] == "docker"
    job = shutil.copytree(OLD, tmp_path / OLD.name)
    finished = scan_finished(JobPaths(job))
    # a reward or a verifier error is final; an agent error and a folder without result.json are run again
    assert sorted(finished) == ["fix-bug", "regex-log", "verify-crash"]


def test_a_result_round_trips_and_keeps_keys_it_does_not_know(tmp_path):
    outcome = AgentOutcome(n_tool_calls=3, n_prompts=1, trajectory_source="acp",
                           usage={"n_input_tokens": 100, "n_output_tokens": 20, "cost_usd": 0.002})
    written = build_result(task_name="t", trial_name="t__0000abcd", agent="claude-agent-acp", model="m",
                           environment="sandbox-x", task_digest="sha256:t", attempt=1, seed=None,
                           started_at=dt.datetime(2026, 4, 22, 10), timing={"total": 12.34, "verifier": 1.06},
                           events=[{"type": "tool_call", "status": "completed"}], outcome=outcome,
                           verifier=VerifierOutcome(rewards={"reward": 1.0, "checks": 3}), error=None,
                           error_category=None)
    path = tmp_path / "result.json"
    write_record(path, TrialResult.model_validate({**written, "reviewer_note": "kept"}))
    back = read_record(TrialResult, path)
    assert back.to_json() == {**written, "reviewer_note": "kept"}
    assert back.reward == 1.0 and back.rewards.model_extra == {"checks": 3}
    assert back.agent_result.total_tokens == 120 and back.timing.model_dump() == {"verifier": 1.1, "total": 12.3}
    assert back.rollout_name == back.trial_name == "t__0000abcd" and back.agent == back.agent_name


def test_a_wrong_typed_value_is_left_out_with_a_note_naming_file_and_field():
    notes: list[str] = []
    result = upgrade(TrialResult, {"task_name": "t", "rewards": {"reward": "1.0"}, "n_tool_calls": "many",
                                   "error": {"code": 7}}, notes=notes, source="job/t__1/result.json")
    assert result.reward is None and result.n_tool_calls is None
    assert result.error == '{"code": 7}'  # a message recorded as an object is kept as its JSON text
    assert any(n.startswith("job/t__1/result.json: rewards.reward:") and n.endswith("left out") for n in notes)
    assert any("n_tool_calls" in n for n in notes)
    assert upgrade(TrialResult, {"rewards": None}, name="some-task__0000abcd").task_name == "some-task"
    with pytest.raises(Unreadable, match="task_name: missing"):
        upgrade(TrialResult, {"rewards": None}, source="result.json")
    with pytest.raises(Unreadable, match="not a JSON object"):
        upgrade(TrialResult, [1, 2], source="result.json")


def test_the_finished_rule_is_the_documented_one():
    assert TrialResult(task_name="t", rewards={"reward": 0.0}).is_finished
    assert TrialResult(task_name="t", verifier_error="Verifier crashed").is_finished
    assert not TrialResult(task_name="t", error="Agent idle for 600s").is_finished


def test_the_summary_keeps_0_7_aliases():
    spec = type("Spec", (), {"agent": "oracle", "model": None, "concurrency": 2, "agent_idle_timeout_sec": None,
                             "seeds": None})()
    results = {"a": {"task_name": "a", "trial_name": "a__1", "rewards": {"reward": 1.0}},
               "b": {"task_name": "b", "verifier_error": "Verifier crashed", "verifier_error_category": "x"},
               "c": None}
    summary = build_summary(job_name="j", spec=spec, sandbox="sandbox-x", results=results, elapsed_sec=1.0,
                            budget=None)
    assert (summary["pass"], summary["passed"], summary["verifier_errored"], summary["unscored"]) == (1, 1, 1, 1)
    assert summary["trials"] == {"a": "a__1", "b": None, "c": None} and summary["schema_version"] == 1


@pytest.mark.parametrize("name", list(schemas.MODELS))
def test_the_shipped_schema_is_the_models_schema(name):
    shipped = schemas.schema_path(name).read_text()
    assert shipped == schemas.render(name), "regenerate: .venv/bin/python -m benchflow.records.schemas"
    Draft202012Validator.check_schema(json.loads(shipped))


def test_records_of_both_versions_validate_against_the_shipped_schemas():
    validators = {name: Draft202012Validator(json.loads(schemas.shipped(name))) for name in schemas.MODELS}
    for trial in JobPaths(BEFORE).trials():  # as written, unchanged
        validators["result"].validate(raw(trial.result))
        validators["config"].validate(raw(trial.config))
        validators["timing"].validate(raw(trial.timing))
    for name in ("summary", "evaluation", "run-card"):
        validators[name].validate(raw(BEFORE / schemas.FILES[name]))
    for trial in JobPaths(OLD).trials():  # upgraded
        if trial.result.is_file():
            validators["result"].validate(read_record(TrialResult, trial.result, name=trial.name).to_json())
        validators["config"].validate(read_record(TrialConfig, trial.config).to_json())
    with pytest.raises(Exception, match="schema_version"):
        validators["result"].validate(raw(OLD / "regex-log__bab1cbf6" / "result.json"))  # 0.7: upgrade first
