"""A multi-step task: its ``steps`` run in order in one sandbox, each an agent phase and a verifier phase.

Each step is the task seen through the step (:func:`step_view`): its prompt is
``steps/<name>/instruction.md``, its agent and verifier settings are the task's
with the step's own keys on top, its verifier folder is the task's with
``steps/<name>/tests/`` (or ``verifier/``) laid over it, its oracle is
``steps/<name>/solution/`` (or ``oracle/``), its artifacts the step's. Before a
step's agent its ``healthcheck`` must pass; after its verifier the verifier's
files are removed again, so the next step's agent never sees them. A step
scored below its ``min_reward``, a step whose verifier gave no verdict, or
whose agent failed (other than by running out of time) stops the trial. The
trial's reward is rolled up by ``multi_step_reward_strategy`` (see
:mod:`benchflow.records.steps`). Each step's files go to ``steps/<NN>-<name>/``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.errors import BenchError
from benchflow.jobs.layout import StepPaths, TrialPaths
from benchflow.jobs.phases import TrialState, agent_phase, verifier_phase
from benchflow.jobs.prompts import resolve_prompts
from benchflow.jobs.trial_request import TrialRequest
from benchflow.records.steps import StepRecord, StepSummary
from benchflow.sandbox.base import Sandbox
from benchflow.util import atomic

from .dirs import first_dir, step_dir

_CLEAR = "rm -rf /verifier /logs/verifier/* /logs/verifier/.[!.]* 2>/dev/null; [ -L /tests ] && rm -f /tests; exit 0"
_CLEAR_LEGACY = "rm -rf /tests /logs/verifier/* /logs/verifier/.[!.]* 2>/dev/null; exit 0"
_SUMMED = ("n_input_tokens", "n_output_tokens", "n_cache_read_tokens", "n_cache_creation_tokens", "cost_usd")
_PHASES = ("healthcheck", "agent_setup", "agent_execution", "verifier")


def _overlay(base: Any, step: Any) -> Any:
    """``base`` (a task config block) with the keys the step set on top."""
    if step is None:
        return base
    return base.model_copy(update={k: getattr(step, k) for k in step.model_fields_set})


def step_view(task: Any, step: Any, verifier_dir: Path) -> Any:
    """The task as one step sees it (``verifier_dir`` holds the step's merged verifier folder)."""
    folder = step_dir(task, step)
    config = task.config.model_copy(update={
        "agent": _overlay(task.config.agent, step.agent),
        "verifier": _overlay(task.config.verifier, step.verifier),
        "artifacts": list(step.artifacts),
        "sandbox": task.config.sandbox.model_copy(update={"setup_commands": [], "healthcheck": step.healthcheck}),
    })
    oracle = first_dir(folder, "oracle", "solution") or task.paths.oracle_dir
    paths = dataclasses.replace(task.paths, verifier_dir=verifier_dir, oracle_dir=oracle, instruction_file=None)
    instruction = (folder / "instruction.md").read_text(encoding="utf-8").strip()
    return dataclasses.replace(task, config=config, paths=paths, instruction=instruction)


def _merge_verifier(task: Any, step: Any, into: Path) -> Path:
    """The task's verifier folder with the step's own laid over it (same-named files: the step's)."""
    own = first_dir(step_dir(task, step), "verifier", "tests")
    if own is None:
        return task.paths.verifier_dir
    if task.paths.verifier_dir.is_dir():
        shutil.copytree(task.paths.verifier_dir, into, symlinks=True)
    shutil.copytree(own, into, symlinks=True, dirs_exist_ok=True)
    return into


def roll_up(strategy: str, scored: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The trial's rewards from the scored steps' rewards (in order)."""
    if not scored:
        return None
    if strategy == "final":
        return dict(scored[-1])
    keys: list[str] = []
    for rewards in scored:
        keys += [k for k, v in rewards.items() if k not in keys and isinstance(v, (int, float))
                 and not isinstance(v, bool)]
    return {k: sum(float(r.get(k, 0.0) or 0.0) for r in scored) / len(scored) for k in keys}


def _status(state: TrialState, rewards: dict[str, Any] | None, gate: float | None) -> str:
    if state.verifier is not None and state.verifier.error or (rewards is None and state.error):
        return "errored"
    reward = (rewards or {}).get("reward")
    if gate is not None and (reward is None or reward < gate):
        return "gated"
    return "passed" if reward is not None and reward >= 1.0 else "failed"


async def _prepare(req: TrialRequest, sandbox: Sandbox, view: Any, step: Any, paths: StepPaths,
                   state: TrialState, timing: dict[str, float]) -> None:
    """The step's oracle folder in place of the last one, and its healthcheck."""
    from benchflow.jobs.setup_commands import SetupFailed, run_setup

    if req.agent.needs_oracle and view.paths.oracle_dir.is_dir():
        remote = "/solution" if view.paths.is_legacy else "/oracle"
        await sandbox.exec(["rm", "-rf", remote], timeout=60)
        await sandbox.put(view.paths.oracle_dir, remote)
    if step.healthcheck is not None:
        t = time.monotonic()
        try:
            await run_setup(sandbox, view, paths.setup_dir, req.task_secrets)
        except SetupFailed as exc:
            state.error, state.error_category = f"step {step.name}: {exc}", "sandbox_setup"
        timing["healthcheck"] = time.monotonic() - t


async def run_steps(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, sink: AcpTrajectoryFile,
                    state: TrialState, timing: dict[str, float]) -> None:
    """Every step in order; the trial's outcome, rolled-up rewards and step summaries land on ``state``."""
    task = req.task
    strategy = task.config.multi_step_reward_strategy or "mean"
    summaries: list[StepSummary] = []
    scored: list[dict[str, Any]] = []
    stop: TrialState | None = None
    for index, step in enumerate(task.config.steps or [], 1):
        step_paths = paths.step(index, step.name)
        rel = step_paths.root.relative_to(paths.root).as_posix()
        if stop is not None:
            summaries.append(StepSummary(index=index, name=step.name, path=rel, status="not_run",
                                         min_reward=step.min_reward))
            continue
        step_paths.make_dirs()
        step_state = dataclasses.replace(state, error=None, error_category=None, outcome=None, verifier=None,
                                         copy_out_info={})
        step_timing: dict[str, float] = {}
        started = dt.datetime.now()
        with tempfile.TemporaryDirectory(prefix="benchflow-step-") as tmp:
            view = step_view(task, step, _merge_verifier(task, step, Path(tmp) / "verifier"))
            prompts = resolve_prompts(view.instruction, [], prefix=view.config.agent.prompt_prefix,
                                      extra_instruction=req.spec.extra_instruction)
            step_req = dataclasses.replace(req, task=view, prompts=prompts)
            await _prepare(req, sandbox, view, step, step_paths, step_state, step_timing)
            if step_state.error is None:
                await agent_phase(step_req, sandbox, step_paths, prompts, sink, step_state, step_timing)
            if step_state.verifier_allowed:
                await verifier_phase(step_req, sandbox, step_paths, step_state, step_timing)
                try:
                    await sandbox.exec(["sh", "-c", _CLEAR_LEGACY if view.paths.is_legacy else _CLEAR], timeout=60)
                except BenchError:
                    pass  # the next step's verifier upload replaces them anyway
        state.installed_by_layer = True  # the agent is installed in this sandbox now
        rewards = _rewards(step_state)
        status = _status(step_state, rewards, step.min_reward)
        _write_step(req, step_paths, index, step, status, prompts, rewards, step_state, step_timing, started)
        summaries.append(StepSummary(
            index=index, name=step.name, path=rel, status=status, reward=(rewards or {}).get("reward"),
            min_reward=step.min_reward, error=step_state.error,
            verifier_error=step_state.verifier.error if step_state.verifier else None))
        for key in _PHASES:
            if key in step_timing:
                timing[key] = timing.get(key, 0.0) + step_timing[key]
        _absorb(state, step_state)
        if rewards is not None:
            scored.append(rewards)
        agent_failed = step_state.error is not None and not (step_state.outcome and step_state.outcome.timed_out)
        if status in ("gated", "errored") or agent_failed:
            stop = step_state
    state.steps = [s.model_dump(mode="json", exclude_none=True) for s in summaries]
    state.multi_step_reward_strategy = strategy
    _verdict(state, stop, summaries, roll_up(strategy, scored))


def _rewards(state: TrialState) -> dict[str, Any] | None:
    rewards = state.verifier.rewards if state.verifier is not None else None
    if rewards is None and state.outcome is not None and state.outcome.timed_out and \
            not (state.verifier and state.verifier.error):
        return {"reward": 0.0}  # a timeout with no verdict is a scored failure, as for a trial
    return rewards


def _absorb(state: TrialState, step: TrialState) -> None:
    """What the trial keeps of a step: the agent outcome (last step's, usage summed), copy-out notes."""
    previous = state.outcome
    state.outcome = step.outcome or previous
    if previous is not None and step.outcome is not None and step.outcome is not previous:
        step.outcome.n_tool_calls += previous.n_tool_calls
        step.outcome.n_prompts += previous.n_prompts
        usage = dict(step.outcome.usage or {})
        for key, value in (previous.usage or {}).items():
            if key in _SUMMED and isinstance(value, (int, float)):
                usage[key] = (usage.get(key) or 0) + value
        step.outcome.usage = usage
    for key, value in step.copy_out_info.items():
        state.copy_out_info[key] = value
    state.api_error_info = step.api_error_info or state.api_error_info
    state.budget_stop = step.budget_stop or state.budget_stop


def _verdict(state: TrialState, stop: TrialState | None, summaries: list[StepSummary],
             rewards: dict[str, Any] | None) -> None:
    """The trial's verifier outcome: the rolled-up rewards, or the stopping step's verifier error."""
    from benchflow.verify.runner import VerifierOutcome

    verifier = VerifierOutcome(rewards=rewards)
    stopped = next((s for s in summaries if s.status in ("errored", "gated")), None)
    if stop is not None and stopped is not None and stopped.verifier_error:
        verifier = VerifierOutcome(error=f"step {stopped.name}: {stopped.verifier_error}",
                                   error_category=stop.verifier.error_category if stop.verifier else None)
    elif stop is not None and stop.error and stopped is not None and stopped.status == "errored":
        state.error, state.error_category = f"step {stopped.name}: {stop.error}", stop.error_category
    if stopped is not None and stopped.status == "gated":
        verifier.warnings.append(f"step {stopped.name} scored below its min_reward {stopped.min_reward:g}; "
                                 "the steps after it did not run")
    state.verifier = verifier
    if state.error is None and state.outcome is not None and state.outcome.error and stop is None:
        state.error, state.error_category = state.outcome.error, state.outcome.error_category


def _write_step(req: TrialRequest, paths: StepPaths, index: int, step: Any, status: str, prompts: list[str],
                rewards: dict[str, Any] | None, state: TrialState, timing: dict[str, float],
                started: dt.datetime) -> None:
    verifier = state.verifier
    atomic.write_json(paths.step_record, StepRecord(
        trial_name=paths.trial, index=index, name=step.name, status=status, prompt=prompts[0] if prompts else None,
        rewards=rewards, min_reward=step.min_reward, error=state.error, error_category=state.error_category,
        verifier_error=verifier.error if verifier else None,
        verifier_error_category=verifier.error_category if verifier else None,
        n_tool_calls=state.outcome.n_tool_calls if state.outcome else None,
        timing={k: round(v, 1) for k, v in timing.items()}, started_at=str(started),
        finished_at=str(dt.datetime.now())).to_json())
