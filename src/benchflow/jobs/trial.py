"""One trial, end to end: build → start → setup → agent → [freeze] → verifier → result.json → stop.

Every phase is timed; every failure becomes an ``error`` + ``error_category`` on
the result instead of an exception, except cancellation, which removes the
sandbox and leaves the trial unfinished (no result.json) so a resume reruns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from benchflow.agents.base import Agent, AgentContext, AgentOutcome
from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.categories import classify_error
from benchflow.errors import AgentError, BenchError, BuildError, InfraError, SandboxError
from benchflow.sandbox.base import Sandbox, SandboxSpec
from benchflow.sandbox.ca import proxy_hint
from benchflow.sandbox.from_task import spec_for_task
from benchflow.util import atomic
from benchflow.util.redact import is_secret_entry, redact_text
from benchflow.util.scrub import scrub_document, scrub_folder

from .agent_layer import build_layered, wants_layer
from .layout import JobPaths, TrialPaths, trial_name
from .prompts import resolve_prompts
from .record import build_config, build_result
from .workspace import freeze_workspace

log = logging.getLogger(__name__)


@dataclass
class TrialRequest:
    """One attempt of one task, as the scheduler hands it to ``run_trial``."""

    task: Any
    """A loaded ``benchflow.tasks.Task``."""
    digest: str
    job: JobPaths
    spec: Any
    """The ``RunSpec``."""
    agent: Agent
    backend: Any
    backend_name: str
    attempt: int = 1
    labels: dict[str, str] = field(default_factory=dict)
    ca_bundle: Path | None = None
    on_phase: Callable[[str, str], None] = lambda _trial, _phase: None
    agent_env: dict[str, str] = field(default_factory=dict)
    """The agent's environment with secrets (never written to disk)."""
    models: Any = None
    """The job's ``ModelAccess`` (gateway + bridge) for agents that call models; None for controls."""
    seed: int | None = None
    """With --seeds: exported as BENCHFLOW_SEED to the agent, the oracle and the verifier."""
    run_slot: asyncio.Semaphore | None = None
    """Held for the agent and verifier phases (the scheduler's concurrency limit)."""
    fit: Any = None
    """How the backend meets the task's sandbox request (``benchflow.sandbox.fit.Fit``, from the plan)."""
    task_secrets: tuple[str, ...] = ()
    """Host values the task reads through ``--allow-task-env``: masked in every file of the trial folder."""


def seed_env(seed: int | None) -> dict[str, str]:
    return {} if seed is None else {"BENCHFLOW_SEED": str(seed)}


def sandbox_spec(req: TrialRequest, trial: str) -> SandboxSpec:
    spec = spec_for_task(req.task, digest=req.digest, sandbox_user=req.spec.sandbox_user,
                         base_image_override=req.spec.base_image_override, ca_bundle=req.ca_bundle,
                         labels={**req.labels, "benchflow.trial": trial, "benchflow.task": req.task.name},
                         mounts=None if req.models is None else req.models.mounts_for(trial, req.backend.capabilities))
    return req.fit.apply(spec) if req.fit is not None else spec


def idle_timeout(req: TrialRequest) -> float | None:
    """``--agent-idle-timeout`` (0 turns it off), else 10 min, 30 min at effort xhigh/max."""
    value = req.spec.agent_idle_timeout_sec
    if value == 0:
        return None
    if value is not None:
        return value
    return 1800.0 if req.spec.reasoning_effort in ("xhigh", "max") else 600.0


def agent_timeout(req: TrialRequest) -> float | None:
    base = req.task.config.agent.timeout_sec
    return None if base is None else float(base) * req.spec.timeout_multiplier


async def run_trial(req: TrialRequest) -> dict[str, Any]:
    """Run one attempt and write its folder; returns the result document."""
    name = trial_name(req.task.name, uuid.uuid4().hex[:8])
    paths = req.job.trial(name)
    paths.make_dirs()
    started_at = dt.datetime.now()
    t0 = time.monotonic()
    timing: dict[str, float] = {}
    prompts = resolve_prompts(req.task.instruction, req.spec.prompts,
                              prefix=req.task.config.agent.prompt_prefix,
                              extra_instruction=req.spec.extra_instruction)
    atomic.write_json(paths.config, build_config(
        spec=req.spec, task_path=str(req.task.path), task_name=req.task.name, digest=req.digest,
        agent=req.agent.name, is_control=req.agent.is_control, environment=req.backend_name,
        started_at=started_at, prompts=prompts, timeout_sec=agent_timeout(req), attempt=req.attempt, seed=req.seed,
        sandbox_fit=req.fit.record() if req.fit is not None else None))
    atomic.write_json(paths.prompts, prompts)
    secrets = tuple(v for k, v in req.agent_env.items() if is_secret_entry(k, v)) + req.task_secrets
    sink = AcpTrajectoryFile(paths.acp_trajectory, secret_values=secrets)
    state = _TrialState()
    sandbox: Sandbox | None = None
    keep = False
    try:
        try:
            sandbox = await _environment_phase(req, paths, state, timing)
            async with req.run_slot or contextlib.nullcontext():
                if state.error is None:
                    await _agent_phase(req, sandbox, paths, prompts, sink, state, timing)
                if state.verifier_allowed:
                    await _verifier_phase(req, sandbox, paths, state, timing)
        except Exception as exc:  # noqa: BLE001 - a dead engine or a bug must not take the job down
            log.debug("trial %s failed unexpectedly", name, exc_info=True)
            state.error = f"{type(exc).__name__}: {exc}"
            state.error_category = unexpected_category(exc)
        timing["total"] = time.monotonic() - t0
        sink.close()
        result = build_result(
            task_name=req.task.name, trial_name=name, agent=req.agent.name, model=req.spec.model,
            environment=req.backend_name, task_digest=req.digest, attempt=req.attempt, seed=req.seed,
            started_at=started_at, timing=timing, events=sink.merger.events, outcome=state.outcome,
            verifier=state.verifier, error=state.error, error_category=state.error_category,
            sandbox_id=state.sandbox_id, sandbox_startup_info=state.sandbox_startup_info,
            api_error_info=state.api_error_info, suspected_api_error_info=state.suspected_api_error_info,
            budget_stop=state.budget_stop)
        if req.task_secrets:  # before result.json marks the trial finished
            await asyncio.to_thread(scrub_folder, paths.root, req.task_secrets)
            result = scrub_document(result, req.task_secrets)
        atomic.write_json(paths.timing, result["timing"])
        _write_rewards(paths, result)
        keep = sandbox is not None and sandbox.capabilities.keep and _keep(req.spec.keep_sandbox, result)
        if keep:
            kept = await sandbox.keep()  # renamed so `bench sandbox cleanup` leaves it to `release`
            atomic.write_json(paths.kept_sandbox, {**kept, "trial": name,
                                                   "created_at": dt.datetime.now(dt.timezone.utc).isoformat()})
        atomic.write_json(paths.result, result)
        return result
    finally:
        if req.task_secrets and not paths.result.exists():  # cancelled or crashed: no secret stays either
            scrub_folder(paths.root, req.task_secrets)
        if sandbox is not None and not keep:
            await stop_surely(sandbox)


async def stop_surely(sandbox: Sandbox) -> None:
    """``sandbox.stop()`` to the end even if the caller is cancelled again meanwhile (SIGTERM twice);
    a cancellation that arrived is re-raised once the sandbox is gone."""
    stopping = asyncio.ensure_future(sandbox.stop())
    cancelled = False
    while not stopping.done():
        try:
            await asyncio.wait([stopping])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


@dataclass
class _TrialState:
    error: str | None = None
    error_category: str | None = None
    sandbox_startup_info: dict[str, Any] | None = None
    outcome: AgentOutcome | None = None
    verifier: Any = None
    sandbox_id: str | None = None
    installed_by_layer: bool = False
    """The agent's install was baked into a cached image layer: no install in the sandbox."""
    model_env: dict[str, str] = field(default_factory=dict)
    api_error_info: dict[str, Any] | None = None
    suspected_api_error_info: dict[str, Any] | None = None
    budget_stop: str | None = None

    @property
    def verifier_allowed(self) -> bool:
        """The verifier scores whenever the agent phase ran (even if it timed out or failed)."""
        return self.outcome is not None and self.error_category not in {"install_failure"}


async def _environment_phase(req: TrialRequest, paths: TrialPaths, state: _TrialState,
                             timing: dict[str, float]) -> Sandbox:
    """Build (task image, then the agent's cached install layer), start, upload; returns the sandbox."""
    t = time.monotonic()
    req.on_phase(paths.name, "build")
    spec = sandbox_spec(req, paths.name)
    sandbox = req.backend.create(spec)
    try:
        await sandbox.build()
        if wants_layer(req.agent, req.backend_name):
            sandbox = await _agent_layer(req, sandbox, spec, paths, state)
            if state.error is not None:
                return sandbox
        req.on_phase(paths.name, "start")
        await sandbox.start()
        state.sandbox_id = sandbox.sandbox_id
        atomic.write_json(paths.sandbox, {"sandbox_id": sandbox.sandbox_id, "provider": type(sandbox).__name__,
                                          "backend": req.backend_name,
                                          "created_at": dt.datetime.now(dt.timezone.utc).isoformat()})
        await _upload_task_files(req, sandbox, paths)
    except SandboxError as exc:
        reason = "build_failed" if isinstance(exc, BuildError) else "start_failed"
        tail = getattr(exc, "log_tail", "") or ""
        hint = proxy_hint(f"{exc}\n{tail}", req.ca_bundle)
        state.error = f"sandbox startup failed: {exc}" + (f"; {hint}" if hint else "") + \
            (f"\n{tail[-2000:]}" if tail else "")
        state.error_category = "sandbox_setup"
        state.sandbox_startup_info = {"reason": reason, "sandbox_id": sandbox.sandbox_id,
                                      "attempts": req.attempt,
                                      "build_timeout_sec": req.task.config.sandbox.build_timeout_sec,
                                      "raw_message": str(exc)[:500]}
    except BenchError as exc:
        state.error, state.error_category = str(exc), exc.category
    except BaseException:  # cancelled (or a bug) mid-way: the caller never gets this sandbox to stop
        await stop_surely(sandbox)
        raise
    finally:
        timing["environment_setup"] = time.monotonic() - t
    return sandbox


async def _agent_layer(req: TrialRequest, base: Sandbox, spec: SandboxSpec, paths: TrialPaths,
                       state: _TrialState) -> Sandbox:
    """The sandbox from the agent's cached install layer; a failed install is ``install_failure``."""
    req.on_phase(paths.name, "install")
    try:
        layered = await build_layered(req.backend, base, spec, req.agent, fresh=req.spec.fresh_install)
    except AgentError as exc:
        state.error, state.error_category = str(exc), exc.category
        atomic.write_text(paths.agent_dir / "install-stdout.txt", redact_text(exc.log_tail))
        return base
    if layered.build_log:
        atomic.write_text(paths.agent_dir / "install-stdout.txt", redact_text(layered.build_log))
    state.installed_by_layer = True
    return layered


async def _upload_task_files(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths) -> None:
    """``/instruction.md`` (and the oracle folder for the oracle), in as few round trips as possible."""
    staging = paths.root / ".upload"
    staging.mkdir(exist_ok=True)
    instruction = req.task.paths.instruction_file
    if instruction is None:
        instruction = staging / "instruction.md"
        instruction.write_text(req.task.instruction)
    await sandbox.put(instruction, "/instruction.md")
    if req.agent.needs_oracle and req.task.paths.oracle_dir is not None:
        await sandbox.put(req.task.paths.oracle_dir, _oracle_remote(req))
    for child in staging.iterdir():
        child.unlink()
    staging.rmdir()


def _oracle_remote(req: TrialRequest) -> str:
    return "/solution" if req.task.paths.is_legacy else "/oracle"


async def _verifier_phase(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: _TrialState,
                          timing: dict[str, float]) -> None:
    from benchflow.verify import run_verifier

    if req.spec.freeze_workspace:
        await freeze_workspace(sandbox, sandbox.workdir, paths)
    req.on_phase(paths.name, "verifier")
    t = time.monotonic()
    state.verifier = await run_verifier(sandbox, req.task, paths.verifier_dir, workdir=sandbox.workdir,
                                        agent_user=req.spec.sandbox_user, task_name=req.task.name,
                                        extra_env=seed_env(req.seed))
    timing["verifier"] = time.monotonic() - t


async def _agent_phase(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, prompts: list[str],
                       sink: AcpTrajectoryFile, state: _TrialState, timing: dict[str, float]) -> None:
    timeout = agent_timeout(req)
    ctx = AgentContext(
        task_name=req.task.name, workdir=sandbox.workdir, prompts=prompts, trial_dir=paths.root,
        trajectory=sink, timeout_sec=timeout, idle_timeout_sec=idle_timeout(req),
        model=req.spec.model, effort=req.spec.reasoning_effort,
        env={**req.agent_env, **state.model_env, **seed_env(req.seed)},
        user=req.spec.sandbox_user, host_login=req.spec.host_login, oracle_dir=_oracle_remote(req) if req.agent.needs_oracle else None,
        oracle_env={**dict(req.task.config.oracle.env or {}), **seed_env(req.seed)},
    )
    t = time.monotonic()
    req.on_phase(paths.name, "install")
    try:
        if not state.installed_by_layer:
            await req.agent.install(sandbox, ctx)
        if req.models is not None:
            model_env = await req.models.open_trial(req.agent, paths.name, paths.llm_trajectory, sandbox,
                                                    model=req.spec.model)
            ctx.env = {**req.agent_env, **model_env, **seed_env(req.seed)}  # the gateway's variables win
            ctx.should_stop = lambda: req.models.budget_exhausted(paths.name)
    except AgentError as exc:
        state.error, state.error_category = f"agent install failed: {exc}", exc.category or "install_failure"
        timing["agent_setup"] = time.monotonic() - t
        return
    timing["agent_setup"] = time.monotonic() - t
    t = time.monotonic()
    req.on_phase(paths.name, "agent")
    try:
        state.outcome = await req.agent.run(sandbox, ctx)
    except BenchError as exc:
        state.outcome = AgentOutcome(error=str(exc), error_category=exc.category)
    timing["agent_execution"] = time.monotonic() - t
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
    try:
        await sandbox.get("/logs/agent", paths.agent_dir)
    except BenchError as exc:
        log.debug("could not download /logs/agent: %s", exc)


def _account_model_use(req: TrialRequest, trial: str, outcome: AgentOutcome, state: _TrialState) -> None:
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


def unexpected_category(exc: BaseException) -> str:
    """``infra_failure`` (retried) for a broken transport or engine, else ``other``: an unexpected
    bug is never retried as if the infrastructure had failed."""
    if isinstance(exc, (InfraError, ConnectionError, TimeoutError)) or _is_transport_error(exc):
        return "infra_failure"
    return "infra_failure" if classify_error(f"{type(exc).__name__}: {exc}") == "infra_failure" else "other"


def _is_transport_error(exc: BaseException) -> bool:
    """The Docker SDK's transport failures (requests' connection errors), without importing it."""
    return any(cls.__module__.startswith(("requests.", "urllib3.")) and cls.__name__ in
               {"ConnectionError", "ReadTimeout", "ProtocolError", "ChunkedEncodingError"}
               for cls in type(exc).__mro__)


def _keep(policy: str, result: dict[str, Any]) -> bool:
    if policy == "always":
        return True
    if policy == "on-failure":
        reward = (result.get("rewards") or {}).get("reward")
        return reward != 1.0
    return False
