"""What ``bench eval continue`` reads and refuses before anything starts, and what continue-batch finds.

The fixture ``tests/fixtures/continue/openhands-0.7`` is a timed-out BenchFlow 0.7 trial of the
``openhands`` agent written from the published formats (its README says which).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchflow.continue_run.discover import find_timed_out
from benchflow.continue_run.plan import ContinueOptions, check_proxy_mode, output_job, plan_continuation, task_folder
from benchflow.continue_run.source import SourceError, read_source
from benchflow.errors import ConfigError, JobFolderError
from benchflow.gateway.replay import Replay
from benchflow.gateway.usage import CHAT
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "continue"
JOB = FIXTURE / "openhands-0.7" / "2026-05-02__10-14-07"
TRIAL = JOB / "fix-bug__5e6f7a8b"


def test_a_timed_out_openhands_trial_of_benchflow_0_7_is_read(tmp_path):
    source = read_source(TRIAL, require_timeout=True)
    assert (source.name, source.task_name, source.config.agent) == ("fix-bug__5e6f7a8b", "fix-bug", "openhands")
    assert (source.timed_out, source.error_category, source.reward) == (True, "timeout", 0.0)
    assert source.prompts == ["Fix the failing test in /app/calc.py so that `pytest -q` passes."]
    assert [(c.index, c.line, c.n_messages, c.provider) for c in source.calls] == [(1, 1, 2, None), (2, 2, 4, None)]
    replay = Replay(source.calls, live=True)  # OpenHands' conversation grows by a tool call and its result
    calls = [replay.answer(CHAT, {"messages": [{}] * n}) for n in (2, 4)]
    assert [a.body["choices"][0]["message"]["tool_calls"][0]["id"] for a in calls] == ["toolu_01", "toolu_02"]
    assert replay.answer(CHAT, {"messages": [{}] * 6}) is None and replay.divergences == []


def copy_trial(tmp_path: Path, job: str = "job-a", name: str = TRIAL.name) -> Path:
    return Path(shutil.copytree(TRIAL, tmp_path / job / name))


@pytest.mark.parametrize(("damage", "why"), [
    (lambda t: shutil.rmtree(t), "no such folder; give a trial folder"),
    (lambda t: (t / "config.json").unlink(), "config.json: missing; give a trial folder, not a job"),
    (lambda t: (t / "trajectory" / "llm_trajectory.jsonl").unlink(), "llm_trajectory.jsonl: missing"),
    (lambda t: (t / "result.json").write_text("{not json"), "result.json: not valid JSON"),
    (lambda t: (t / "prompts.json").write_text('{"prompts": 1}'), "prompts.json: not a JSON list"),
    (lambda t: (t / "trajectory" / "llm_trajectory.jsonl").write_text("{}\n"), "line 1: not a recorded exchange"),
])
def test_a_folder_that_cannot_be_continued_is_refused_naming_the_file(tmp_path, damage, why):
    trial = copy_trial(tmp_path)
    damage(trial)
    with pytest.raises(JobFolderError, match=why):  # a SourceError, or the recording's RecordingError
        read_source(trial)


def test_require_timeout_refuses_a_trial_that_ended_otherwise(tmp_path):
    trial = copy_trial(tmp_path)
    result = json.loads((trial / "result.json").read_text())
    (trial / "result.json").write_text(json.dumps({**result, "error": None, "error_category": None}))
    assert read_source(trial).timed_out is False  # without the flag it is read (the command notes it)
    with pytest.raises(SourceError, match="error_category is None, not a timeout; --require-timeout"):
        read_source(trial, require_timeout=True)


def test_the_task_comes_from_tasks_dir_or_the_recorded_task_path(tmp_path, monkeypatch):
    source = read_source(TRIAL)
    tasks = FIXTURE / "tasks"
    assert task_folder(source, tasks) == tasks / "fix-bug"
    assert task_folder(source, tasks / "fix-bug") == tasks / "fix-bug"  # the task folder itself
    with pytest.raises(SourceError, match=f"--tasks-dir {tmp_path}: no task folder fix-bug in it"):
        task_folder(source, tmp_path)
    with pytest.raises(SourceError, match="task_path 'tasks/fix-bug' is not a folder here; give --tasks-dir"):
        task_folder(source, None)
    monkeypatch.chdir(FIXTURE)  # the recorded task_path is relative to where the run started
    assert task_folder(source, None) == tasks / "fix-bug"


def test_the_continued_trial_goes_under_the_original_job_unless_output_says(tmp_path):
    assert output_job(TRIAL, None).root == JOB / "continued" / JOB.name
    assert output_job(TRIAL, tmp_path / "out").root == tmp_path / "out" / JOB.name


@pytest.mark.parametrize(("mode", "why"), [("sandbox", "no proxy to place in the sandbox; use auto or host"),
                                           ("remote", "--proxy-mode 'remote': use auto or host")])
def test_proxy_mode_sandbox_is_refused_with_the_reason(mode, why):
    check_proxy_mode("auto")
    check_proxy_mode("host")
    with pytest.raises(ConfigError, match=why):
        check_proxy_mode(mode)


def test_the_built_in_openhands_is_refused_here_with_its_reason():
    with pytest.raises(SourceError, match="agent 'openhands' cannot run here: .*needs Python 3.12"):
        plan_continuation(read_source(TRIAL), ContinueOptions(tasks_dir=FIXTURE / "tasks"))


def test_an_agent_whose_calls_a_replay_cannot_answer_is_refused(tmp_path, monkeypatch):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "openhands.toml").write_text(
        'name = "openhands"\ndescription = "x"\nlaunch = "true"\n[install]\nkind = "script"\nscript = "true"\n'
        '[gateway]\napi = "anthropic-messages"\nbase_url_env = ["ANTHROPIC_BASE_URL"]\n')
    monkeypatch.setenv("BENCHFLOW_AGENTS_DIR", str(tmp_path / "agents"))
    with pytest.raises(SourceError, match="agent openhands speaks anthropic-messages; replay answers OpenAI Chat"):
        plan_continuation(read_source(TRIAL), ContinueOptions(tasks_dir=FIXTURE / "tasks"))


def finished(trial: Path, reward: float = 1.0, **extra: object) -> None:
    result = json.loads((trial / "result.json").read_text())
    (trial / "result.json").write_text(json.dumps({**result, "rewards": {"reward": reward}, "error": None,
                                                   "error_category": None, **extra}))


def test_continue_batch_finds_each_timed_out_trial_once(tmp_path):
    timed_out = copy_trial(tmp_path, "job-a")
    other = copy_trial(tmp_path, "job-b", "fix-bug__00000002")
    finished(copy_trial(tmp_path, "job-a", "fix-bug__00000003"))
    (copy_trial(tmp_path, "job-a", "fix-bug__00000004") / "result.json").unlink()  # killed: no result
    copy_trial(tmp_path, "job-a/.set-aside", "fix-bug__00000005")
    shutil.copytree(TRIAL, timed_out / "branches" / "f1" / "children" / "n1")  # part of its trial
    assert find_timed_out(tmp_path).trials == [timed_out, other]
    assert find_timed_out(tmp_path, limit=1).trials == [timed_out]
    assert find_timed_out(timed_out).trials == [timed_out]  # a trial folder itself

    done = output_job(timed_out, None).trial("fix-bug__0c0c0c0c").root
    shutil.copytree(TRIAL, done)  # a finished continuation of it
    finished(done, continued={"from_trial": str(timed_out)})
    found = find_timed_out(tmp_path)
    assert found.trials == [other]
    assert found.skipped == [(timed_out, f"already continued in {done}")]
    assert find_timed_out(tmp_path, output=tmp_path / "elsewhere").trials == [timed_out, other]


def chat_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user agent named ``openhands`` that speaks Chat Completions (and needs no install to be planned)."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "openhands.toml").write_text(
        'name = "openhands"\ndescription = "x"\nlaunch = "true"\n[install]\nkind = "script"\nscript = "true"\n'
        '[gateway]\napi = "openai-completions"\nbase_url_env = ["LLM_BASE_URL"]\napi_key_env = ["LLM_API_KEY"]\n')
    monkeypatch.setenv("BENCHFLOW_AGENTS_DIR", str(tmp_path / "agents"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_a_live_continuation_needs_a_provider_for_its_model(tmp_path, monkeypatch):
    chat_agent(tmp_path, monkeypatch)
    with pytest.raises(ConfigError, match="live model gpt-4o: no model provider for it is configured here"):
        plan_continuation(read_source(TRIAL), ContinueOptions(tasks_dir=FIXTURE / "tasks", model="gpt-4o"))


@pytest.mark.docker  # the original's sandbox is docker: the plan asks it whether it works here
def test_replay_only_plans_the_original_settings_with_a_keyless_provider(tmp_path, monkeypatch):
    chat_agent(tmp_path, monkeypatch)
    plan = plan_continuation(read_source(TRIAL), ContinueOptions(tasks_dir=FIXTURE / "tasks", replay_only=True,
                                                                 output=tmp_path / "out"))
    spec = plan.run_spec
    assert (plan.live_model, spec.model, spec.agent, spec.sandbox, spec.sandbox_user) == (
        None, "anthropic/claude-sonnet-4-5", "openhands", "docker", "agent")
    assert spec.config_override == {"agent": {"timeout_sec": 900}} and spec.retry.attempts == 0
    assert plan.prompts == read_source(TRIAL).prompts and plan.job.root == tmp_path / "out" / JOB.name
    [provider] = list(plan.upstreams)
    assert (provider.name, provider.api_key) == ("openai", None)  # the Chat Completions API; never sent a call
    assert plan.notes == ["task fix-bug changed since fix-bug__5e6f7a8b ran (sha256:fix-bug-0.7 -> "
                          f"{plan.planned.digest}): the replay may diverge"]


@pytest.mark.docker  # as above: the plan asks the original's sandbox whether it works here
def test_a_task_whose_trials_run_in_a_mode_of_their_own_is_refused(tmp_path, monkeypatch):
    chat_agent(tmp_path, monkeypatch)
    shutil.copytree(ROOT / "tests" / "fixtures" / "tasks" / "multi-step-gate", tmp_path / "tasks" / "fix-bug")
    with pytest.raises(SourceError, match="task fix-bug runs its trials in a mode of its own \\(StepsMode"):
        plan_continuation(read_source(TRIAL), ContinueOptions(tasks_dir=tmp_path / "tasks", replay_only=True))
