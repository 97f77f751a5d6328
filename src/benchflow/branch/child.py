"""One branch child: [restore the snapshot] → agent phase → [nested snapshot] → verifier phase → record.

The agent phase runs behind the child's own network set-up (:func:`benchflow.jobs.agent_network.agent_network`):
the cloud-metadata proof and, for an ``allowlist`` task, an egress proxy bridged into the restored
sandbox, exactly like an ordinary trial (``network.json`` and ``egress.jsonl`` in the child's folder).

No lifecycle code of its own: the child reuses the public trial phases
(:mod:`benchflow.jobs.phases`) on a sandbox someone else's ``sandbox_session``
holds, and writes its folder in the usual trial layout plus ``observation.json``.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.jobs.agent_network import agent_network
from benchflow.jobs.phases import TrialState, agent_phase, record_phase, verifier_phase
from benchflow.jobs.trial import unexpected_category
from benchflow.jobs.trial_request import TrialRequest
from benchflow.records.branch import Observation
from benchflow.sandbox.base import Sandbox
from benchflow.util.redact import is_secret_entry

from .tree import ChildPaths, now, observe, write_observation

log = logging.getLogger(__name__)

RETRYABLE = frozenset({"api_error", "suspected_api_error", "infra_failure", "acp_error", "pipe_closed",
                       "install_failure", "sandbox_setup"})
"""Categories of a child that failed before its agent did anything (--child-retries)."""


@dataclass
class ChildRun:
    """What one child needs besides its sandbox."""

    req: TrialRequest
    paths: ChildPaths
    fork: str
    parent_node: str | None
    prompts: list[str]
    prompt_source: str
    installed: bool
    """The agent is already installed in the snapshot (the parent's install, or its image layer)."""
    resume_session: str | None = None
    """The ACP session to reload (``--resume-session``: the conversation at the fork)."""
    clear_logs: bool = True
    """The snapshot may hold an earlier agent's ``/logs/agent`` (cleared first, one exec); False
    when the fork was taken before any agent ran or with its logs already cleared."""
    after_agent: Callable[[], None] | None = None
    """Called once the child's agent has stopped (or the child ended without one): children in
    turns (:mod:`.turns`) hand the next child its turn."""
    session_id: str | None = None
    """The session the child's agent ended in (a nested fork's children reload it)."""


async def clear_agent_logs(sandbox: Sandbox) -> None:
    """A restored sandbox holds the parent's ``/logs/agent``: the child's folder gets only its own."""
    await sandbox.exec(["sh", "-c", "rm -rf /logs/agent/* /logs/agent/.[!.]* 2>/dev/null; mkdir -p /logs/agent"])


async def run_child(run: ChildRun, sandbox: Sandbox, *, restore: Callable[[], Awaitable[None]] | None,
                    before_verify: Callable[[], Awaitable[None]] | None = None,
                    after_verify: Callable[[], Awaitable[None]] | None = None,
                    retries: int = 0, previous: Observation | None = None) -> Observation:
    """Run the child (``restore`` first when given) and write its observation; retried up to
    ``retries`` times when it failed before its agent did anything. ``before_verify`` takes a nested
    fork's snapshot; ``after_verify`` runs the nested fork while this sandbox still exists."""
    attempts = previous.attempts if previous is not None else 0
    while True:
        attempts += 1
        obs, retry = await _attempt(run, sandbox, restore, before_verify, attempts)
        if not retry or attempts > retries:
            break
        restore = restore or (lambda: _nothing())
        log.info("%s: retrying (%s)", run.paths.name, obs.error_category)
    if after_verify is not None:
        await after_verify()
    return obs


async def _nothing() -> None:
    return None


async def _attempt(run: ChildRun, sandbox: Sandbox, restore: Callable[[], Awaitable[None]] | None,
                   before_verify: Callable[[], Awaitable[None]] | None, attempts: int) -> tuple[Observation, bool]:
    req, paths = run.req, run.paths
    paths.make_dirs()
    base = Observation(fork=run.fork, node=paths.node, parent_node=run.parent_node, status="running",
                       request={"prompts": run.prompts, "prompt_source": run.prompt_source},
                       attempts=attempts, started_at=now())
    write_observation(paths, base)
    secrets = tuple(v for k, v in req.agent_env.items() if is_secret_entry(k, v)) + req.task_secrets
    sink = AcpTrajectoryFile(paths.acp_trajectory, secret_values=secrets)
    state = TrialState(installed_by_layer=run.installed)
    timing: dict[str, float] = {}
    started_at = dt.datetime.now()
    t0 = time.monotonic()
    try:
        if restore is not None:
            await restore()
            timing["environment_setup"] = time.monotonic() - t0
        state.sandbox_id = sandbox.sandbox_id
        if run.clear_logs:
            await clear_agent_logs(sandbox)
        async with agent_network(req, sandbox, paths, state):  # a restored sandbox is a new one: its own proxy
            if state.error is None:
                await agent_phase(req, sandbox, paths, run.prompts, sink, state, timing,
                                  resume_session=run.resume_session, after_run=run.after_agent)
        if run.after_agent is not None:  # no agent ran (a failed restore or network set-up)
            run.after_agent()
        run.session_id = state.outcome.session_id if state.outcome is not None else None
        if before_verify is not None:
            await before_verify()
        if state.verifier_allowed:
            await verifier_phase(req, sandbox, paths, state, timing)
    except Exception as exc:  # noqa: BLE001 - a child's failure is recorded, never raised
        log.debug("child %s failed", paths.name, exc_info=True)
        state.error = f"{type(exc).__name__}: {exc}"
        state.error_category = unexpected_category(exc)
    seconds = time.monotonic() - t0
    timing["total"] = seconds
    result: dict[str, Any] = await record_phase(req, paths, started_at, timing, sink, state)
    obs = observe(result, base, seconds)
    write_observation(paths, obs)
    did_nothing = state.outcome is None or not (state.outcome.n_tool_calls or state.outcome.n_message_chunks)
    retry = (not obs.is_finished and did_nothing and (obs.error_category in RETRYABLE)
             and not req.agent.is_control)
    return obs, retry
