"""Multi-role scenes: a task's ``scenes`` run turn by turn in one sandbox (contracts §1.3, §1.5).

Each turn is a separate ACP session of the agent that plays the turn's role
(``agents.roles.<name>``: its agent, model, reasoning effort, timeout, idle
timeout, env and skills), in the same sandbox and workspace as the turns before
it (``benchflow.teams.<scene>.handoff``: ``mode: sequential``,
``workspace_visibility: shared``). A role is played by the agent it names; when
that is the run's ``--agent``, the run's ``--model``/``--reasoning-effort`` apply
unless the role sets its own. With ``trajectory_visibility: metadata`` a turn's
prompt ends with a short list of the turns before it (role, agent, how it
ended); with ``none`` (the default) it gets nothing of them.

A turn's prompt is composed from the base instruction, the role's prompt, the
scene's prompt and the turn's inline prompt (``benchflow.prompt``):
``composition: replace`` (default) takes the most specific one present (turn >
scene > role > base), ``append`` joins every one present in ``order``. The
task's ``agent.prompt_prefix`` is prepended as for any prompt, and the task's
simulated user (:mod:`benchflow.sim_user.user`) answers after each turn.

A turn whose agent fails (other than by running out of time), or that spends
its token or turn budget (``--token-budget``/``--turn-budget`` count per turn),
ends the scenes; the verifier scores the final workspace once either way. Each turn's files go
to ``turns/<NN>-<role>/`` (``turn.json``, ``agent/``, ``trajectory/``); the
trial's ``acp_trajectory.jsonl`` has every turn, each after a ``turn_start``
event.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any

from benchflow.agents.base import AgentOutcome
from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.errors import BenchError
from benchflow.jobs.agent_layer import wants_layer
from benchflow.jobs.layout import StepPaths, TrialPaths
from benchflow.jobs.phases import TrialState
from benchflow.jobs.prompts import resolve_prompts
from benchflow.jobs.trial_request import TrialRequest
from benchflow.records.turns import TurnRecord
from benchflow.sim_user.user import converse
from benchflow.tasks.scene_rules import composition
from benchflow.util import atomic

from .plan import Turn, compose, role_agents, role_player, turns_of

_SUMMED = ("n_input_tokens", "n_output_tokens", "n_cache_read_tokens", "n_cache_creation_tokens", "cost_usd")


class _TurnTrajectory(AcpTrajectoryFile):
    """A turn's own ``acp_trajectory.jsonl`` that also feeds the trial's."""

    def __init__(self, path: Any, trial: AcpTrajectoryFile) -> None:
        super().__init__(path, trial._secrets)
        self.trial = trial

    def add_secrets(self, values: list[str] | tuple[str, ...]) -> None:
        super().add_secrets(values)
        self.trial.add_secrets(values)

    def emit(self, event: Any) -> None:
        super().emit(event)
        self.trial.emit(event)

    def close(self) -> None:
        super().close()
        self.trial.close()


def _ending(outcome: AgentOutcome | None) -> str:
    if outcome is None:
        return "did not run"
    if outcome.timed_out or outcome.idle_timed_out:
        return "ran out of time"
    if outcome.error:
        return f"failed ({outcome.error_category or 'other'})"
    return "finished"


def _metadata(done: list[dict[str, Any]]) -> str:
    if not done:
        return ""
    lines = [f"- turn {d['index']}: role {d['role']} (agent {d['agent']}) {d['ending']}" for d in done]
    return ("Earlier turns in this workspace (their conversations are not shown):\n" + "\n".join(lines))


def _view(task: Any, turn: Turn) -> Any:
    """The task as the turn's role sees it: its timeout, its skills folder, no artifacts of its own."""
    cfg = task.config
    agent = cfg.agent.model_copy(update={"timeout_sec": turn.config["timeout_sec"]}) \
        if turn.config.get("timeout_sec") else cfg.agent
    sandbox = cfg.sandbox.model_copy(update={"skills_dir": turn.config["skills_dir"]}) \
        if turn.config.get("skills_dir") else cfg.sandbox
    return dataclasses.replace(task, config=cfg.model_copy(update={"agent": agent, "sandbox": sandbox,
                                                                   "artifacts": []}))


async def run_scenes(req: TrialRequest, sandbox: Any, paths: TrialPaths, sink: AcpTrajectoryFile,
                     state: TrialState, timing: dict[str, float]) -> None:
    """Every turn of every scene in order; the trial's combined outcome lands on ``state``."""
    task = req.task
    mode, order = composition(task)
    base = resolve_prompts(task.instruction, [], extra_instruction=req.spec.extra_instruction)[0]
    scene_prompts = {s["name"]: s.get("prompt") for s in task.scenes}
    installed = {a.name for a in (req.agent, *role_agents(req))
                 if state.installed_by_layer and wants_layer(a, req.backend)}
    done: list[dict[str, Any]] = []
    outcomes: list[AgentOutcome] = []
    stop = False
    for turn in turns_of(task):
        turn_paths = StepPaths(paths.root / "turns" / f"{turn.index:02d}-{_safe(turn.role)}", trial=paths.name)
        record: dict[str, Any] = {"trial_name": paths.name, "index": turn.index, "scene": turn.scene,
                                  "role": turn.role, "agent": turn.config.get("agent")}
        if stop:
            turn_paths.root.mkdir(parents=True, exist_ok=True)
            atomic.write_json(turn_paths.root / "turn.json", TurnRecord(**record, status="not_run").to_json())
            continue
        turn_paths.make_dirs()
        prompt = compose({"base": base, "role": turn.config.get("prompt"), "scene": scene_prompts.get(turn.scene),
                          "turn": turn.inline}, mode, order)
        if turn.visibility == "metadata" and done:
            prompt = f"{prompt}\n\n{_metadata(done)}"
        prompts = resolve_prompts(prompt, [], prefix=task.config.agent.prompt_prefix)
        turn_state = dataclasses.replace(state, error=None, error_category=None, outcome=None, copy_out_info={})
        turn_timing: dict[str, float] = {}
        started = dt.datetime.now()
        try:
            agent, model, effort = role_player(req, turn.config)
        except BenchError as exc:
            turn_state.error, turn_state.error_category = f"role {turn.role}: {exc}", "agent_integration"
        else:
            turn_state.installed_by_layer = agent.name in installed
            spec = req.spec.model_copy(update={"model": model, "reasoning_effort": effort, **(
                {"agent_idle_timeout_sec": float(turn.config["idle_timeout_sec"])}
                if turn.config.get("idle_timeout_sec") else {})})
            turn_req = dataclasses.replace(req, task=_view(task, turn), spec=spec, agent=agent, prompts=prompts,
                                           agent_env={**req.agent_env, **(turn.config.get("env") or {})})
            sink.emit({"type": "turn_start", "scene": turn.scene, "turn": turn.index, "role": turn.role,
                       "agent": agent.name})
            turn_sink = _TurnTrajectory(turn_paths.acp_trajectory, sink)
            await converse(turn_req, sandbox, turn_paths, prompts, turn_sink, turn_state, turn_timing)
            turn_sink.close()
            installed.add(agent.name)
            record.update(agent=agent.name, model=model, reasoning_effort=effort)
        outcome = turn_state.outcome
        done.append({"index": turn.index, "role": turn.role, "agent": record["agent"],
                     "ending": _ending(outcome) if outcome is not None else "failed"})
        if outcome is not None:
            outcomes.append(outcome)
        for key, value in turn_timing.items():
            timing[key] = timing.get(key, 0.0) + value
        state.copy_out_info.update(turn_state.copy_out_info)
        state.api_error_info = turn_state.api_error_info or state.api_error_info
        state.budget_stop = turn_state.budget_stop or state.budget_stop
        if turn_state.error and state.error is None:
            state.error = f"scene {turn.scene} turn {turn.index} (role {turn.role}): {turn_state.error}"
            state.error_category = turn_state.error_category
        timed_out = outcome is not None and (outcome.timed_out or outcome.idle_timed_out)
        stop = (bool(turn_state.error) and not timed_out) or bool(turn_state.budget_stop)
        atomic.write_json(turn_paths.root / "turn.json", TurnRecord(
            **record, status="failed" if turn_state.error and not timed_out else
            ("timed_out" if timed_out else "finished"), prompt=prompts[0],
            error=turn_state.error, error_category=turn_state.error_category,
            n_tool_calls=outcome.n_tool_calls if outcome else None,
            n_prompts=outcome.n_prompts if outcome else None,
            total_tokens=_tokens(outcome), cost_usd=(outcome.usage or {}).get("cost_usd") if outcome else None,
            session_id=outcome.session_id if outcome else None,
            timing={k: round(v, 1) for k, v in turn_timing.items()},
            started_at=str(started), finished_at=str(dt.datetime.now())).to_json())
    state.outcome = _combined(outcomes, stopped=stop)
    await _artifacts(req, sandbox, paths, state)


def _tokens(outcome: AgentOutcome | None) -> int | None:
    """The turn's metered tokens (input, output and cache), or None when nothing was metered."""
    usage = (outcome.usage or {}) if outcome is not None else {}
    values = [usage[k] for k in _SUMMED[:4] if isinstance(usage.get(k), (int, float))]
    return int(sum(values)) if values else None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "role"


def _combined(outcomes: list[AgentOutcome], stopped: bool) -> AgentOutcome | None:
    """One outcome for the trial: counts and usage summed over the turns, the last turn's ending."""
    if not outcomes:
        return None if stopped else AgentOutcome()
    last = dataclasses.replace(outcomes[-1], usage=dict(outcomes[-1].usage or {}))
    last.n_tool_calls = sum(o.n_tool_calls for o in outcomes)
    last.n_prompts = sum(o.n_prompts for o in outcomes)
    last.n_message_chunks = sum(o.n_message_chunks for o in outcomes)
    last.n_thought_chunks = sum(o.n_thought_chunks for o in outcomes)
    for key in _SUMMED:
        values = [o.usage.get(key) for o in outcomes if isinstance((o.usage or {}).get(key), (int, float))]
        if values:
            last.usage[key] = sum(values)
    last.timed_out = any(o.timed_out for o in outcomes)
    return last


async def _artifacts(req: TrialRequest, sandbox: Any, paths: TrialPaths, state: TrialState) -> None:
    """The task's artifacts, once, after the last turn."""
    from benchflow.jobs.artifacts import collect_artifacts

    try:
        artifacts = await collect_artifacts(req.task, sandbox, paths.artifacts_dir)
    except BenchError as exc:
        state.copy_out_info["artifacts"] = {"error": str(exc)}
        return
    if artifacts is not None:
        state.copy_out_info["artifacts"] = artifacts
