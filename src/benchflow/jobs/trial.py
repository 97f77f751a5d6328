"""One trial, end to end: sandbox session → environment → mode → verifier → record.

The one trial runner: every trial of every command runs here. The phases live in :mod:`.phases`;
this module composes them around one :func:`~benchflow.sandbox.session.sandbox_session`. What runs
the agent is the trial's mode (:mod:`.modes`: steps, a feature's, scenes, plain), or the mode a caller
hands :func:`run_trial` (``bench branch``'s branched trial). Every phase is timed; every failure
becomes an ``error`` + ``error_category`` on the result instead of an exception, except
cancellation, which removes the sandbox and leaves the trial unfinished (no result.json) so a resume
reruns it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import time
import uuid
from typing import Any

from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.categories import classify_error
from benchflow.errors import BenchError, InfraError
from benchflow.sandbox.base import Sandbox, discard
from benchflow.sandbox.session import SessionSetupError, sandbox_session
from benchflow.util import atomic
from benchflow.util.redact import is_secret_entry
from benchflow.util.scrub import scrub_folder

from . import ahead
from .agent_layer import wants_layer
from .extensions import TrialMode, hooks
from .layout import TrialPaths, trial_name
from .phases import (
    TrialState,
    agent_layer,
    environment_phase,
    record_phase,
    setup_failure,
    verifier_phase,
)
from .modes import trial_mode
from .record import build_config
from .trial_request import TrialRequest, agent_timeout, sandbox_spec

__all__ = ["TrialRequest", "run_trial", "unexpected_category"]

log = logging.getLogger(__name__)


async def run_trial(req: TrialRequest, mode: TrialMode | None = None) -> dict[str, Any]:
    """Run one attempt and write its folder; returns the result document.

    ``mode``: the caller's (``bench branch``'s, made for the folder ``req.name`` names); None: the
    trial's own (:func:`.modes.trial_mode`). ``config.json`` and ``prompts.json`` record the trial's
    first start: a folder run again (a rerun finishing a branched trial's children) keeps them."""
    task = req.task
    for task_view in hooks(req.spec, "task_view"):  # a run config's scenes replace the task's
        task = task_view(req.spec, task)
    if task is not req.task:
        req = dataclasses.replace(req, task=task)
    name = req.name or trial_name(req.task.name, uuid.uuid4().hex[:8])
    paths = req.job.trial(name)
    paths.make_dirs()
    started_at = dt.datetime.now()
    t0 = time.monotonic()
    timing: dict[str, float] = {}
    prompts = req.prompts
    if not paths.config.exists():
        _write_config(req, paths, started_at)
    secrets = tuple(v for k, v in req.agent_env.items() if is_secret_entry(k, v)) + req.task_secrets
    sink = AcpTrajectoryFile(paths.acp_trajectory, secret_values=secrets)
    state = TrialState()
    if mode is None:
        mode = trial_mode(req, paths, prompts)  # steps, --checkpoints, scenes, the simulated user, or plain
    spec = sandbox_spec(req, name)

    others = [agent for layer_agents in hooks(req.spec, "layer_agents") for agent in layer_agents(req)]
    layered = [a for a in (req.agent, *others) if wants_layer(a, req.backend)]

    async def install_layer(base: Sandbox) -> Sandbox:  # each agent of the trial (a scene's roles too), one layer each
        for agent in layered:
            base = await agent_layer(req if agent is req.agent else dataclasses.replace(req, agent=agent),
                                     base, spec, paths, state)
        return base

    def on_step(step: str) -> None:
        if step == "build":  # the engine's create and start are waits: import what comes after them meanwhile
            ahead.begin()
        req.on_phase(name, step)

    result: dict[str, Any] | None = None
    try:
        t = time.monotonic()
        async with sandbox_session(req.backend, spec, on_step=on_step,
                                   prepare=install_layer if layered else None,
                                   ) as session:
            await ahead.ready()
            from .agent_network import agent_network  # what runs in a started sandbox: imported by now

            verify = next((phase for phase in (own(req) for own in hooks(req.spec, "verifier"))
                           if phase is not None), verifier_phase)  # a verifier sandbox of its own, or the trial's
            await environment_phase(req, session.sandbox, paths, state)
            timing["environment_setup"] = time.monotonic() - t
            try:
                await _before_trial(req, session.sandbox, paths, state)  # e.g. a stateful environment provisioned
                timing["environment_setup"] = time.monotonic() - t
                async with req.run_slot or contextlib.nullcontext():
                    network = contextlib.nullcontext() if mode.opens_network else \
                        agent_network(req, session.sandbox, paths, state)  # metadata block, allowlist proxy
                    async with network:
                        if state.error is None:
                            await mode.agent_phase(session.sandbox, sink, state, timing)
                    if state.verifier_allowed and mode.verifier_runs:
                        await verify(req, session.sandbox, paths, state, timing)
                    await mode.after_verifier(session.sandbox, state)
            except Exception as exc:  # noqa: BLE001 - a dead engine or a bug must not take the job down
                _unexpected(name, exc, state)
            finally:
                await _after_trial(req, session.sandbox, paths, state)
            timing["total"] = time.monotonic() - t0
            result = await record_phase(req, paths, started_at, timing, sink, state)
            if session.sandbox.capabilities.keep and _keep(req.spec.keep_sandbox, result):
                kept = await session.keep()  # renamed so `bench sandbox cleanup` leaves it to `release`
                atomic.write_json(paths.kept_sandbox, {**kept, "trial": name,
                                                       "created_at": dt.datetime.now(dt.timezone.utc).isoformat()})
            else:  # nothing needs it any more: its removal need not hold up the records or the exit
                await discard(session.sandbox)
    except SessionSetupError as failure:
        timing["environment_setup"] = time.monotonic() - t
        if not setup_failure(req, failure, state):
            _unexpected(name, failure.cause, state)
    except Exception as exc:  # noqa: BLE001 - e.g. the engine died while the sandbox was being recorded
        _unexpected(name, exc, state)
    finally:
        if req.task_secrets and result is None and not paths.result.exists():
            scrub_folder(paths.root, req.task_secrets)  # cancelled or crashed: no secret stays either
    if result is None:
        timing["total"] = time.monotonic() - t0
        result = await record_phase(req, paths, started_at, timing, sink, state)
    mode.annotate(result)  # also when the sandbox never started (a branched trial's tree is still reported)
    atomic.write_json(paths.result, result)
    return result


def _write_config(req: TrialRequest, paths: TrialPaths, started_at: dt.datetime) -> None:
    """``config.json`` and ``prompts.json``, before the trial's sandbox is asked for."""
    atomic.write_json(paths.config, build_config(
        spec=req.spec, task_path=str(req.task.path), task_name=req.task.name, digest=req.digest,
        agent=req.agent.name, agent_version=req.agent.version, is_control=req.agent.is_control, environment=req.backend_name,
        started_at=started_at, prompts=req.prompts, timeout_sec=agent_timeout(req), attempt=req.attempt,
        seed=req.seed, sandbox_fit=req.fit.record() if req.fit is not None else None,
        features=_feature_records(req), provenance=req.provenance))
    atomic.write_json(paths.prompts, req.prompts)


async def _before_trial(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: TrialState) -> None:
    """The features' ``before_trial`` points; the first failure is the trial's error (no agent runs)."""
    for before_trial in hooks(req.spec, "before_trial"):
        if state.error is not None:
            return
        try:
            await before_trial(req, sandbox, paths, state)
        except BenchError as exc:
            state.error, state.error_category = str(exc), exc.category


async def _after_trial(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: TrialState) -> None:
    """The features' ``after_trial`` points, each run even when one before it failed (shielded: a
    cancelled trial still stops what its features started)."""
    for after_trial in hooks(req.spec, "after_trial"):
        try:
            await asyncio.shield(after_trial(req, sandbox, paths, state))
        except BenchError as exc:
            log.warning("trial %s: %s", paths.name, exc)


def _feature_records(req: TrialRequest) -> dict[str, Any]:
    """The features' keys of ``config.json`` (the skill policy's)."""
    record: dict[str, Any] = {}
    for trial_record in hooks(req.spec, "trial_record"):
        record.update(trial_record(req))
    return record


def _unexpected(trial: str, exc: BaseException, state: TrialState) -> None:
    log.debug("trial %s failed unexpectedly", trial, exc_info=True)
    state.error = f"{type(exc).__name__}: {exc}"
    state.error_category = unexpected_category(exc)


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
