"""The run flags of checkpoints and retries: what is refused up front, when a retry is due, the feedback prompt,
and ``checkpoint_retries`` in summary.json."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from benchflow.agents.base import AgentOutcome
from benchflow.branch.retry import retry_trigger, verifier_feedback
from benchflow.errors import ConfigError
from benchflow.jobs.config_file import build_run_spec, spec_fields
from benchflow.jobs.layout import TrialPaths
from benchflow.jobs.phases import TrialState
from benchflow.jobs.summary import retry_stats
from benchflow.records import as_result


def test_flags_and_run_config_keys_make_the_spec() -> None:
    spec = build_run_spec(fields={"checkpoints.after": "prompt:2,1", "checkpoints.keep": 2,
                                  "checkpoints.retry": "on-failure", "checkpoints.retry_prompt": "@verifier_feedback"})
    assert (spec.checkpoints.after, spec.checkpoints.keep, spec.checkpoints.retry) == ([1, 2], 2, "on-failure")
    fields = spec_fields({"checkpoints": "every-prompt", "checkpoint_keep": 5, "retry_from_checkpoint": "both",
                          "retry_resume_session": True}, "run.yaml")
    spec = build_run_spec(fields=fields)
    assert (spec.checkpoints.after, spec.checkpoints.keep, spec.checkpoints.retry_resume_session) == (
        "every-prompt", 5, True)
    assert build_run_spec().checkpoints.keep == 3


@pytest.mark.parametrize(("fields", "needle"), [
    ({"checkpoints.retry": "on-failure"}, "needs --checkpoints"),
    ({"checkpoints.after": "prompt:0"}, "every-prompt or prompt:N"),
    ({"checkpoints.after": "every-prompt", "checkpoints.retry_prompt": "again"},
     "--retry-prompt applies to a checkpoint retry"),
    ({"checkpoints.retry_prompt": "again"}, "--retry-prompt applies to a checkpoint retry"),
    ({"checkpoints.after": "every-prompt", "checkpoints.retry_resume_session": True}, "--retry-resume-session applies"),
    ({"checkpoints.after": "every-prompt", "checkpoints.retry": "sometimes"}, "bench run: retry_from_checkpoint: "),
    ({"checkpoints.keep": 0}, "bench run: checkpoint_keep: "),
])
def test_what_cannot_work_is_refused_in_one_line(fields: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_run_spec(fields=fields, source="bench run")
    assert needle in str(caught.value) and "\n" not in str(caught.value).strip()


def _state(reward: float | None = None, timed_out: bool = False) -> TrialState:
    state = TrialState(outcome=AgentOutcome(timed_out=timed_out))
    state.error_category = "timeout" if timed_out else None
    state.verifier = SimpleNamespace(rewards=None if reward is None else {"reward": reward}, error=None)
    return state


def test_a_retry_is_due_only_for_the_endings_asked_for() -> None:
    assert retry_trigger(None, _state(0.0)) is None
    assert retry_trigger("on-failure", _state(0.0)) == "failure"
    assert retry_trigger("on-failure", _state(None)) == "failure"  # no verdict is no pass
    assert retry_trigger("on-failure", _state(1.0)) is None
    assert retry_trigger("on-failure", _state(0.0, timed_out=True)) is None
    assert retry_trigger("on-timeout", _state(0.0, timed_out=True)) == "timeout"
    assert retry_trigger("on-timeout", _state(0.0)) is None
    assert retry_trigger("both", _state(0.5)) == "failure"
    assert retry_trigger("both", _state(1.0, timed_out=True)) == "timeout"


def test_verifier_feedback_carries_the_reward_and_the_output_tail(tmp_path: Path) -> None:
    paths = TrialPaths(tmp_path)
    paths.verifier_dir.mkdir(parents=True)
    (paths.verifier_dir / "test-stdout.txt").write_text("x" * 5000 + "\nFAILED test_answer: expected done\n")
    text = verifier_feedback(paths, _state(0.25))
    assert text.startswith("The previous attempt was scored 0.25 by the task's verifier.")
    assert text.endswith("FAILED test_answer: expected done") and len(text) < 2200
    assert "printed nothing" in verifier_feedback(TrialPaths(tmp_path / "none"), _state(None))


def test_summary_counts_retries_beside_the_trials_rewards() -> None:
    def result(task: str, reward: float, retry: float | None) -> object:
        doc = {"task_name": task, "rewards": {"reward": reward}}
        if retry is not None or task == "c":
            doc["retry"] = {"trigger": "failure", "reward": retry, "status": "passed" if retry == 1 else "failed"}
        return as_result(doc)

    stats = retry_stats({"a": result("a", 0.0, 1.0), "b": result("b", 0.5, 0.25), "c": result("c", 0.0, None),
                         "d": result("d", 1.0, None), "e": None})
    assert stats == {"retried": 3, "passed": 1, "improved": 1, "mean_reward": 0.625,
                     "trials": {"a": 1.0, "b": 0.25, "c": None}}
    assert retry_stats({"d": result("d", 1.0, None)}) is None
