"""Harbor's records through the upgrade path: the shapes the fixture does not hold (multi-step trials, a
reward map without a ``reward`` key, a verifier exception beside a reward) and the trial config."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from benchflow.records import EvaluationRecord, TrialConfig, TrialResult, upgrade

JOB = Path(__file__).resolve().parents[1] / "fixtures" / "harbor-job" / "jobs" / "2026-05-01__10-00-00"


def harbor_result(trial: str = "fix-bug__Qm7aZ2k") -> dict:
    return json.loads((JOB / trial / "result.json").read_text())


def test_a_multi_step_trial_sums_its_steps_tokens_and_takes_the_first_step_exception():
    data = harbor_result()
    step = {"step_name": "one", "agent_result": copy.deepcopy(data["agent_result"]), "verifier_result": None,
            "exception_info": None}
    failing = {**copy.deepcopy(step), "step_name": "two",
               "exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "out of time",
                                  "exception_traceback": "", "occurred_at": "2026-05-01T10:03:00Z"}}
    data.update(agent_result=None, step_results=[step, failing])
    result = upgrade(TrialResult, data)
    usage = result.agent_result
    assert (usage.n_input_tokens, usage.n_cache_read_tokens, usage.n_output_tokens) == (2 * 11230, 2 * 30000,
                                                                                        2 * 2210)
    assert usage.total_tokens == 2 * (41230 + 2210) and usage.cost_usd == 2 * 0.0912
    assert (result.error, result.error_category) == ("AgentTimeoutError: out of time", "timeout")


def test_a_single_reward_under_another_name_is_the_reward_and_several_are_kept_unscored():
    data = harbor_result()
    data["verifier_result"] = {"rewards": {"accuracy": 0.75}}
    assert upgrade(TrialResult, data).reward == 0.75
    data["verifier_result"] = {"rewards": {"accuracy": 0.75, "style": 1}}
    result = upgrade(TrialResult, data)
    assert result.reward is None and result.rewards.model_dump()["style"] == 1


def test_a_verifier_exception_beside_a_reward_is_no_verifier_error():
    data = harbor_result()
    data["exception_info"] = {"exception_type": "VerifierTimeoutError", "exception_message": "slow",
                              "exception_traceback": "", "occurred_at": "2026-05-01T10:03:00Z"}
    result = upgrade(TrialResult, data)
    assert result.reward == 1.0 and result.verifier_error is None and result.error == "VerifierTimeoutError: slow"
    data["verifier_result"] = None
    result = upgrade(TrialResult, data)
    assert (result.verifier_error, result.verifier_error_category) == ("VerifierTimeoutError: slow",
                                                                       "verifier_timeout")


def test_harbor_trial_and_job_configs_read_as_ours():
    config = upgrade(TrialConfig, json.loads((JOB / "fix-bug__Qm7aZ2k" / "config.json").read_text()))
    assert (config.task_path, config.task_name, config.agent, config.model, config.environment) == (
        "tasks/fix-bug", "fix-bug", "claude-code", "anthropic/claude-sonnet-4-5", "docker")
    job = upgrade(EvaluationRecord, json.loads((JOB / "config.json").read_text()))
    assert job.identity == {"agent": "claude-code", "model": "anthropic/claude-sonnet-4-5"}
    assert job.run_config["concurrency"] == 2 and job.run_config["n_attempts"] == 2
