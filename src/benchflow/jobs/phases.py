"""The phases of one trial, public so that every caller composes the same steps.

A trial is ``sandbox_session`` (build, [agent layer], start) → :func:`environment_phase`
(record the sandbox, upload the task's files) → :func:`agent_phase` →
:func:`verifier_phase` → :func:`record_phase`. Each phase records what it found on
a :class:`TrialState` instead of raising; :func:`setup_failure` records a sandbox
that never came up. A branch of a run (restore a snapshot, then agent and
verifier phases) reuses these without new lifecycle code.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchflow.agents.base import AgentContext, AgentOutcome
from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.errors import AgentError, BenchError, BuildError, SandboxError
from benchflow.sandbox.base import Sandbox, SandboxSpec
from benchflow.sandbox.ca import proxy_hint
from benchflow.sandbox.session import SessionSetupError
from benchflow.sandbox.uploads import put_all
from benchflow.util import atomic
from benchflow.util.redact import redact_text
from benchflow.util.scrub import scrub_document, scrub_folder

from .agent_layer import build_layered
from .extensions import hooks
from .layout import TrialPaths
from .retry import deterministic_reason
from .trial_request import TrialRequest, agent_timeout, idle_timeout, seed_env
from .workspace import freeze_workspace

if TYPE_CHECKING:
    from benchflow.verify.runner import VerifierOutcome

log = logging.getLogger(__name__)


@dataclass
class TrialState:
    """What the phases of one trial found out, for its record."""

    error: str | None = None
    error_category: str | None = None
    sandbox_startup_info: dict[str, Any] | None = None
    outcome: AgentOutcome | None = None
    verifier: VerifierOutcome | None = None
    sandbox_id: str | None = None
    installed_by_layer: bool = False
    """The agent's install was baked into a cached image layer: no install in the sandbox."""
    model_env: dict[str, str] = field(default_factory=dict)
    egress_env: dict[str, str] = field(default_factory=dict)
    """The agent's (and oracle's) proxy variables under ``allowlist`` (:mod:`.agent_network`)."""
    api_error_info: dict[str, Any] | None = None
    suspected_api_error_info: dict[str, Any] | None = None
    budget_stop: str | None = None
    copy_out_info: dict[str, Any] = field(default_factory=dict)
    """Per folder copied out of the sandbox (agent, verifier), what the copy left behind."""
    verifier_env: dict[str, str] = field(default_factory=dict)
    """Variables the environment phase hands the verifier (setup commands' ``capture_dir`` captures)."""
    steps: list[dict[str, Any]] | None = None
    """A multi-step task's step summaries (:mod:`benchflow.steps.runner`); None for a single-step task."""
    multi_step_reward_strategy: str | None = None

    @property
    def verifier_allowed(self) -> bool:
        """The verifier scores whenever the agent phase ran (even if it timed out or failed)."""
        return self.outcome is not None and self.error_category not in {"install_failure"}

async def agent_layer(req: TrialRequest, base: Sandbox, spec: SandboxSpec, paths: TrialPaths,
                       state: TrialState) -> Sandbox:
    """The sandbox from the agent's cached install layer (a ``sandbox_session`` ``prepare`` step); a
    failed install is recorded as ``install_failure`` and raised, so the session never starts."""
    req.on_phase(paths.name, "install")
    try:
        layered = await build_layered(req.backend, base, spec, req.agent, fresh=req.spec.fresh_install)
    except AgentError as exc:
        state.error, state.error_category = str(exc), exc.category
        atomic.write_text(paths.install_log, redact_text(exc.log_tail))
        raise
    if layered.build_log:
        atomic.write_text(paths.install_log, redact_text(layered.build_log))
    state.installed_by_layer = True
    return layered

async def upload_task_files(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths) -> None:
    """``/instruction.md`` (and the oracle folder for the oracle), in as few round trips as possible."""
    staging = paths.root / ".upload"
    staging.mkdir(exist_ok=True)
    instruction = req.task.paths.instruction_file
    if instruction is None:
        instruction = staging / "instruction.md"
        instruction.write_text(req.task.instruction)
    uploads = [(instruction, "/instruction.md")]
    if req.agent.needs_oracle and req.task.paths.oracle_dir is not None and req.task.paths.oracle_dir.is_dir():
        uploads.append((req.task.paths.oracle_dir, _oracle_remote(req)))
    await put_all(sandbox, uploads)
    for child in staging.iterdir():
        child.unlink()
    staging.rmdir()


def _oracle_remote(req: TrialRequest) -> str:
    return "/solution" if req.task.paths.is_legacy else "/oracle"


async def environment_phase(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: TrialState) -> None:
    """The started sandbox: record it (``sandbox.json``) and upload the instruction and, for the
    oracle, its folder. A failed upload is the trial's error."""
    state.sandbox_id = sandbox.sandbox_id
    atomic.write_json(paths.sandbox, {"sandbox_id": sandbox.sandbox_id, "provider": type(sandbox).__name__,
                                      "backend": req.backend_name,
                                      "created_at": dt.datetime.now(dt.timezone.utc).isoformat()})
    try:
        await upload_task_files(req, sandbox, paths)
    except BenchError as exc:
        state.error, state.error_category = str(exc), exc.category
        return
    from .setup_commands import SetupFailed, run_setup

    try:
        state.verifier_env = await run_setup(sandbox, req.task, paths.setup_dir, req.task_secrets)
    except SetupFailed as exc:
        state.error, state.error_category = str(exc), "sandbox_setup"


def setup_failure(req: TrialRequest, failure: SessionSetupError, state: TrialState) -> bool:
    """Record a sandbox that never came up: an agent install that failed in its image layer is
    ``install_failure`` (already recorded by :func:`agent_layer`); a build or start is ``sandbox_setup``.
    False when the cause is none of ours (a broken transport, a bug): the caller classifies it."""
    exc = failure.cause
    if isinstance(exc, AgentError):
        state.error = state.error or str(exc)
        state.error_category = state.error_category or exc.category or "install_failure"
    elif isinstance(exc, SandboxError):
        reason = "build_failed" if isinstance(exc, BuildError) else "refused" if exc.deterministic else "start_failed"
        tail = getattr(exc, "log_tail", "") or ""
        hint = proxy_hint(f"{exc}\n{tail}", req.ca_bundle)
        state.error = f"sandbox startup failed: {exc}" + (f"; {hint}" if hint else "") + \
            (f"\n{tail[-2000:]}" if tail else "")
        state.error_category = "sandbox_setup"
        state.sandbox_startup_info = {"reason": reason, "sandbox_id": state.sandbox_id,
                                      "attempts": req.attempt,
                                      "build_timeout_sec": req.task.config.sandbox.build_timeout_sec,
                                      "raw_message": str(exc)[:500]}
    elif isinstance(exc, BenchError):
        state.error, state.error_category = str(exc), exc.category
    else:
        return False
    return True


async def agent_phase(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, prompts: list[str],
                       sink: AcpTrajectoryFile, state: TrialState, timing: dict[str, float], *,
                       resume_session: str | None = None, follow_up: Any = None,
                       after_run: Callable[[], None] | None = None) -> None:
    """Install (unless layered), open model access, deploy skills, run the agent on ``prompts``
    (continuing the ACP session ``resume_session`` when given; after them, ``follow_up`` gives the
    next prompts, see :mod:`benchflow.sim_user.user`), copy its logs and artifacts out. ``after_run`` is called
    once the agent has stopped, before the copy-outs (a branch child hands its turn on)."""
    timeout = agent_timeout(req)
    ctx = AgentContext(
        task_name=req.task.name, workdir=sandbox.workdir, prompts=prompts, trial_dir=paths.root,
        trajectory=sink, timeout_sec=timeout, idle_timeout_sec=idle_timeout(req),
        model=req.spec.model, effort=req.spec.reasoning_effort,
        env={**req.agent_env, **state.model_env, **state.egress_env, **seed_env(req.seed)},
        user=req.agent_user, host_login=req.spec.host_login, oracle_dir=_oracle_remote(req) if req.agent.needs_oracle else None,
        oracle_env={**dict(req.task.config.oracle.env or {}), **state.egress_env, **seed_env(req.seed)},
        mcp_servers=list(req.task.config.sandbox.mcp_servers), resume_session=resume_session,
        follow_up=follow_up,
    )
    t = time.monotonic()
    req.on_phase(paths.name, "install")
    try:
        if not state.installed_by_layer:
            await req.agent.install(sandbox, ctx)
        if req.models is not None:
            model_env = await req.models.open_trial(req.agent, paths.name, paths.llm_trajectory, sandbox,
                                                    model=req.spec.model)
            ctx.env = {**req.agent_env, **model_env, **state.egress_env, **seed_env(req.seed)}  # gateway's vars win
            ctx.should_stop = lambda: req.models.stop_reason(paths.name)
    except AgentError as exc:
        message = str(exc) if "install failed" in str(exc) else f"agent install failed: {exc}"
        state.error, state.error_category = message, exc.category or "install_failure"
        timing["agent_setup"] = time.monotonic() - t
        return
    try:
        for before_agent in hooks(req.spec, "before_agent"):  # e.g. the run's skills deployed
            await before_agent(req, sandbox, None if req.agent.is_control else ctx.user)
    except BenchError as exc:
        state.error, state.error_category = f"sandbox startup failed: {exc}", "sandbox_setup"
        return
    timing["agent_setup"] = time.monotonic() - t
    t = time.monotonic()
    req.on_phase(paths.name, "agent")
    try:
        state.outcome = await req.agent.run(sandbox, ctx)
    except BenchError as exc:
        state.outcome = AgentOutcome(error=str(exc), error_category=exc.category)
    timing["agent_execution"] = time.monotonic() - t
    if after_run is not None:
        after_run()
    outcome = state.outcome
    if req.models is not None:
        _account_model_use(req, paths.name, outcome, state)
    if outcome.timed_out and outcome.error is None:
        outcome.error = f"Agent prompt exceeded wall-clock budget {timeout:g}s"
        outcome.error_category = "timeout"
        outcome.agent_timeout_info = outcome.agent_timeout_info or {
            "reason": "wall_clock_timeout", "timeout_sec": timeout, "n_tool_calls": outcome.n_tool_calls,
            "pending_tool_call_ids": [], "terminal_event_recorded": True, "terminal_trajectory_complete": True}
        sink.emit({"type": "agent_timeout", "reason": "wall_clock_timeout", "timeout_sec": timeout,
                   "pending_tool_call_ids": [], "terminal_trajectory_complete": True})
    if outcome.error:
        state.error, state.error_category = outcome.error, outcome.error_category or "other"
    from benchflow.sandbox.downloads import get_all

    from .artifacts import AGENT_ARTIFACTS, collect_artifacts

    logs, artifacts_copy = await get_all(sandbox, [("/logs/agent", paths.agent_dir),
                                                   (AGENT_ARTIFACTS, paths.artifacts_dir)])
    if isinstance(logs, Exception):  # gone or unreadable: the trial goes on without them
        log.debug("could not download /logs/agent: %s", logs)
    elif logs is not None and logs.note() is not None:
        state.copy_out_info["agent"] = logs.note()
    artifacts = await collect_artifacts(req.task, sandbox, paths.artifacts_dir, artifacts_copy)
    if artifacts is not None:
        state.copy_out_info["artifacts"] = artifacts

def _account_model_use(req: TrialRequest, trial: str, outcome: AgentOutcome, state: TrialState) -> None:
    """Usage and cost from the gateway; provider failures and budget stops become the trial's error."""
    from benchflow.gateway import api_error_message, suspected_api_error_message

    info = req.models.close_trial(trial, outcome.n_tool_calls)
    reported = (outcome.usage or {}).get("agent_reported")
    outcome.usage = dict(info.get("usage") or outcome.usage)
    if reported:  # what the agent itself said it used, kept beside the gateway's count
        outcome.usage["usage_details"] = {**(outcome.usage.get("usage_details") or {}), "agent_reported": reported}
    state.api_error_info = info.get("api_error_info")
    state.suspected_api_error_info = info.get("suspected_api_error_info")
    if outcome.error is None and state.api_error_info:
        outcome.error, outcome.error_category = api_error_message(state.api_error_info), "api_error"
    elif outcome.error is None and state.suspected_api_error_info and not outcome.timed_out:
        outcome.error = suspected_api_error_message(state.suspected_api_error_info)
        outcome.error_category = "suspected_api_error"
    state.budget_stop = info.get("budget_exhausted")
    if req.spec.usage_tracking == "required" and outcome.usage.get("usage_source") != "provider_response":
        outcome.error = outcome.error or "usage tracking required, but no trusted usage was recorded"
        outcome.error_category = outcome.error_category or "usage_unavailable"


async def verifier_phase(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: TrialState,
                         timing: dict[str, float]) -> None:
    """[Freeze the workspace], then the task's verifier (which fences the agent off first)."""
    from benchflow.verify import run_verifier

    if req.spec.freeze_workspace:  # what is frozen is what the verifier sees: the agent is stopped first
        from benchflow.verify.fence import stop_agent_processes

        await stop_agent_processes(sandbox, req.agent_user)
        await freeze_workspace(sandbox, sandbox.workdir, paths)
    req.on_phase(paths.name, "verifier")
    t = time.monotonic()
    state.verifier = await run_verifier(sandbox, req.task, paths.verifier_dir, workdir=sandbox.workdir,
                                        agent_user=req.agent_user, task_name=req.task.name,
                                        extra_env={**state.verifier_env, **seed_env(req.seed)}, trial_dir=paths.root,
                                        gateway=req.models.gateway if req.models is not None else None)
    if state.verifier.copy_out:
        state.copy_out_info["verifier"] = state.verifier.copy_out
    timing["verifier"] = time.monotonic() - t


async def record_phase(req: TrialRequest, paths: TrialPaths, started_at: dt.datetime, timing: dict[str, float],
                       sink: AcpTrajectoryFile, state: TrialState) -> dict[str, Any]:
    """The result document, with ``timing.json`` and ``rewards.jsonl`` written (``result.json`` is the
    caller's to write last: its presence marks the trial finished). Task secrets are masked first."""
    from .result_record import build_result  # the result's models: built while the sandbox started (jobs.ahead)

    sink.close()
    result = build_result(
        task_name=req.task.name, trial_name=paths.name, agent=req.agent.name, model=req.spec.model,
        environment=req.backend_name, task_digest=req.digest, attempt=req.attempt, seed=req.seed,
        started_at=started_at, timing=timing, events=sink.merger.events, outcome=state.outcome,
        verifier=state.verifier, error=state.error, error_category=state.error_category,
        sandbox_id=state.sandbox_id, sandbox_startup_info=state.sandbox_startup_info,
        api_error_info=state.api_error_info, suspected_api_error_info=state.suspected_api_error_info,
        budget_stop=state.budget_stop, copy_out_info=state.copy_out_info, steps=state.steps,
        multi_step_reward_strategy=state.multi_step_reward_strategy)
    once = deterministic_reason(result)
    if once and result.get("error") and req.spec.retry.attempts > 0:  # why the scheduler gives up at once
        result["error"] = f"{result['error']} [attempted once: {once}]"
    if req.task_secrets:  # before result.json marks the trial finished
        await asyncio.to_thread(scrub_folder, paths.root, req.task_secrets)
        result = scrub_document(result, req.task_secrets)
    atomic.write_json(paths.timing, result["timing"])
    _write_rewards(paths, result)
    return result


def _write_rewards(paths: TrialPaths, result: dict[str, Any]) -> None:
    rewards = result.get("rewards")
    if not rewards:
        return
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    rows = []
    for i, item in enumerate(rewards.get("rubric") or []):
        rows.append({"ts": now, "type": "process", "source": "verifier_rubric", "value": item.get("score"),
                     "tag": item.get("name") or f"rubric_{i}", "step_index": i, "space": "output",
                     "granularity": "step", "meta": {k: v for k, v in item.items() if k not in {"score", "name"}}})
    rows.append({"ts": now, "type": "terminal", "source": "verifier", "value": rewards.get("reward"),
                 "tag": "reward", "step_index": None, "space": rewards.get("space", "output"),
                 "granularity": rewards.get("granularity", "terminal"),
                 "meta": {k: v for k, v in rewards.items() if k != "reward"}})
    atomic.write_jsonl(paths.rewards, rows)
