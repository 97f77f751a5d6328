"""One branched trial: the parent up to the checkpoint, the snapshot, the forks, then the parent's rest.

Inside one ``sandbox_session``: environment phase → parent agent phase (the
prompts before the checkpoint, a snapshot kept after each ``--checkpoints``
prompt) → snapshot → every unfinished child of the trial's own fork (restoring
the one sandbox between children, or each in a sandbox of its own created from
the snapshot) → with ``--parent continue``, restore once more, send the
remaining prompts and verify → ``result.json``. A child with nested children
is snapshotted after its agent phase, and its fork runs while its sandbox
still exists. A rerun runs only what is unfinished.

A fork's snapshot is the declared environment state (:mod:`.env_state`, with
``--snapshot-layers environment|both``) and the sandbox snapshot (unless
``environment``). Sequential children run in turns where the backend starts
sandboxes from a snapshot (:mod:`.turns`: one agent at a time, each later child
in a sandbox started ahead from the snapshot); otherwise they restore the one
sandbox, asking the backend to start the next restore's sandbox ahead
(``prepare_restore``) while a child runs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchflow.agents.trajectory import AcpTrajectoryFile
from benchflow.jobs.agent_layer import wants_layer
from benchflow.jobs.agent_network import agent_network
from benchflow.jobs.layout import TrialPaths
from benchflow.jobs.phases import (
    TrialState,
    agent_layer,
    environment_phase,
    record_phase,
    setup_failure,
    verifier_phase,
)
from benchflow.jobs.trial import unexpected_category
from benchflow.jobs.trial_request import TrialRequest, sandbox_spec
from benchflow.sandbox.base import Sandbox
from benchflow.sandbox.optional import PreparesRestore
from benchflow.sandbox.session import SessionSetupError, sandbox_session, stop_surely
from benchflow.util import atomic
from benchflow.util.redact import is_secret_entry

from . import env_state
from .checkpoint import send_prompts
from .child import ChildRun, clear_agent_logs, run_child
from .env_state import DeclaredState
from .spec import BranchSpec, checkpoint_after
from .tree import ROOT_FORK, TreeFile, child_paths, child_prompts, fork_id

log = logging.getLogger(__name__)


@dataclass
class BranchedTrial:
    spec: BranchSpec
    req: TrialRequest
    paths: TrialPaths
    tree: TreeFile
    task_prompts: list[str]
    """The task's own prompts (what a child without a prompt runs when the checkpoint is after the last)."""
    installed: bool = False
    start_from: str | None = None
    """A kept snapshot to restore first (``--from-checkpoint``)."""
    env_state: DeclaredState | None = None
    """The task's declared database state, captured at each fork (``--snapshot-layers environment|both``)."""
    clean_forks: set[str] = field(default_factory=set)
    """Forks whose snapshot holds no earlier agent's ``/logs/agent``: their children need not clear it."""

    @property
    def prompts(self) -> list[str]:
        return self.tree.tree.parent_prompts

    def session_spec(self) -> Any:
        # No host mounts for the model bridge: a restored or isolated sandbox reaches the gateway
        # through its exec stream, whatever trial name its route has.
        return sandbox_spec(replace(self.req, models=None), self.paths.name)


async def run_branched_trial(bt: BranchedTrial) -> dict[str, Any]:
    """Run (or finish) one branched trial; returns its ``result.json`` document."""
    req, paths = bt.req, bt.paths
    secrets = tuple(v for k, v in req.agent_env.items() if is_secret_entry(k, v)) + req.task_secrets
    sink = AcpTrajectoryFile(paths.acp_trajectory, secret_values=secrets)
    state = TrialState()
    timing: dict[str, float] = {}
    started_at, t0 = dt.datetime.now(), time.monotonic()
    session_spec = bt.session_spec()

    async def install_layer(base: Any) -> Any:
        return await agent_layer(req, base, session_spec, paths, state)

    try:
        async with sandbox_session(req.backend, session_spec,
                                   prepare=install_layer if wants_layer(req.agent, req.backend) else None
                                   ) as session:
            sandbox = session.sandbox
            await environment_phase(req, sandbox, paths, state)
            if bt.start_from is not None and state.error is None:
                await sandbox.restore(bt.start_from)
            timing["environment_setup"] = time.monotonic() - t0
            if state.error is None:
                await _branch(bt, sandbox, sink, state, timing)
    except SessionSetupError as failure:
        if not setup_failure(req, failure, state):
            state.error, state.error_category = str(failure.cause), unexpected_category(failure.cause)
    except Exception as exc:  # noqa: BLE001 - recorded on the trial, like a plain trial's
        log.debug("branched trial %s failed", paths.name, exc_info=True)
        state.error, state.error_category = f"{type(exc).__name__}: {exc}", unexpected_category(exc)
    timing["total"] = time.monotonic() - t0
    result = await record_phase(req, paths, started_at, timing, sink, state)
    result["branch"] = branch_block(bt)
    atomic.write_json(paths.result, result)
    return result


async def _branch(bt: BranchedTrial, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                  timing: dict[str, float]) -> None:
    spec, tree = bt.spec, bt.tree
    at = tree.tree.checkpoint_after_prompt
    bt.installed = state.installed_by_layer
    if at > 0:
        await _parent_prompts(bt, sandbox, 0, at, sink, state, timing)
        bt.installed = bt.installed or state.outcome is not None
        if state.error is not None and state.outcome is None:
            return  # the parent never ran: no state to branch from
        if spec.resume_session and not (state.outcome and state.outcome.load_session):
            state.error = (f"--resume-session: agent {bt.req.agent.name} does not advertise loadSession in its "
                           "ACP initialize capabilities, so no child could reload the parent's conversation; "
                           "run without --resume-session and give each child a prompt that stands alone")
            state.error_category = "agent_integration"
            return
    ref: str | None = None
    forked = not tree.fork_done(ROOT_FORK)
    if forked:
        ref = await fork_point(bt, sandbox, ROOT_FORK)
        tree.set_fork(ROOT_FORK, snapshot=ref, snapshot_kept=spec.retain_snapshots and ref is not None,
                      status="running",
                      session_id=state.outcome.session_id if state.outcome is not None else None)
        await run_fork(bt, sandbox, ROOT_FORK, ref, dirty=False)
    if spec.parent != "continue":
        return
    if forked:
        await back_to(bt, sandbox, ROOT_FORK, ref)
    state.error = state.error_category = None
    rest = bt.prompts[at:]
    if rest:
        await _parent_prompts(bt, sandbox, at, len(bt.prompts), sink, state, timing)
    elif state.outcome is None:
        from benchflow.agents.base import AgentOutcome

        state.outcome = AgentOutcome(n_prompts=0, trajectory_source=bt.req.agent.name)
    if state.verifier_allowed:
        await verifier_phase(bt.req, sandbox, bt.paths, state, timing)


async def _parent_prompts(bt: BranchedTrial, sandbox: Sandbox, start: int, stop: int, sink: AcpTrajectoryFile,
                          state: TrialState, timing: dict[str, float]) -> None:
    """Send parent prompts ``start..stop`` in one agent phase per stretch between ``--checkpoints``,
    keeping a snapshot after each checkpoint prompt (at most ``--checkpoint-keep``, oldest deleted).
    From ``start`` > 0 (``--parent continue``) the network records of the prompts before are kept."""
    points = checkpoint_after(bt.spec.checkpoints, len(bt.prompts))
    async with agent_network(bt.req, sandbox, bt.paths, state, continued=start > 0):  # metadata block, proxy
        if state.error is None:
            await send_prompts(bt.req, sandbox, bt.paths, bt.prompts, start, stop, points,
                               bt.spec.checkpoint_keep, bt.tree, sink, state, timing)


async def fork_point(bt: BranchedTrial, sandbox: Sandbox, fork: str) -> str | None:
    """Take ``fork``'s snapshot: the declared environment state first (when asked), then the sandbox
    (unless ``--snapshot-layers environment``); returns the sandbox snapshot's reference.

    The root fork's snapshot is taken with ``/logs/agent`` as children start with it: untouched when
    no agent ran yet, else emptied here once (the parent's logs are copied out already, and with
    ``--parent discard`` nothing continues in this sandbox) instead of once by each child."""
    if fork == ROOT_FORK:
        ran = bt.tree.tree.checkpoint_after_prompt > 0 or bt.start_from is not None
        if ran and bt.spec.parent == "discard":
            await clear_agent_logs(sandbox)
        if not ran or bt.spec.parent == "discard":
            bt.clean_forks.add(fork)
    if bt.env_state is not None:
        await env_state.capture(sandbox, bt.env_state, state_folder(bt.paths, fork))
    if bt.spec.snapshot_layers == "environment":
        return None
    return await sandbox.snapshot(retain=bt.spec.retain_snapshots)


async def back_to(bt: BranchedTrial, sandbox: Sandbox, fork: str, ref: str | None) -> None:
    """Put ``sandbox`` back as it was at ``fork``: the sandbox snapshot, then the declared state."""
    if ref is not None:
        await sandbox.restore(ref)
    if bt.env_state is not None:
        await env_state.restore(sandbox, bt.env_state, state_folder(bt.paths, fork))


def state_folder(paths: TrialPaths, fork: str) -> Path:
    """Where ``fork``'s declared environment state and its manifest are kept."""
    return paths.root / "branches" / fork / "state"


async def run_fork(bt: BranchedTrial, sandbox: Sandbox, fork: str, ref: str | None, *, dirty: bool) -> None:
    """Every unfinished child of ``fork``: in ``sandbox`` (restored between children) or, for an
    isolated fork, each in a sandbox of its own restored from ``ref``, ``--concurrency`` at a time."""
    tree = bt.tree
    entry = tree.tree.fork(fork)
    assert entry is not None
    todo = [n for n in entry.children if not tree.subtree_finished(n)]
    stopped = False
    if entry.isolated:
        gate = asyncio.Semaphore(bt.spec.concurrency)

        async def one(node: str) -> bool:
            async with gate:
                if stopped:
                    return False
                return await _isolated_child(bt, fork, node, ref)

        outcomes = await asyncio.gather(*(one(n) for n in todo))
        stopped = bt.spec.stop_on_child_failure and not all(outcomes)
    elif _in_turns(bt, fork, todo, ref):
        await _run_in_turns(bt, sandbox, fork, todo, ref, dirty=dirty)
    else:
        for i, node in enumerate(todo):
            later = len(todo) - i - 1 + (fork == ROOT_FORK and bt.spec.parent == "continue")
            ok = await _child(bt, sandbox, fork, node, ref, fresh=not dirty, ahead=later if ref is not None else 0)
            dirty = True
            if not ok and bt.spec.stop_on_child_failure:
                stopped = True
                break
    status = "stopped" if stopped else ("complete" if tree.fork_done(fork) else "partial")
    tree.set_fork(fork, status=status)


def _in_turns(bt: BranchedTrial, fork: str, todo: list[str], ref: str | None) -> bool:
    """Whether a sequential fork's children can run in turns (:mod:`.turns`): each in a sandbox
    started from the snapshot, every child standing alone."""
    tree = bt.tree.tree
    return (ref is not None and len(todo) > 1 and bt.req.backend.capabilities.start_from_snapshot
            and not bt.spec.stop_on_child_failure and bt.env_state is None
            and bt.session_spec().compose_file is None
            and all(tree.fork(fork_id(node)) is None for node in todo))


async def _run_in_turns(bt: BranchedTrial, sandbox: Sandbox, fork: str, todo: list[str], ref: str, *,
                        dirty: bool) -> None:
    """A fork's children in turns (:mod:`.turns`): the first in the trial's sandbox (a spare started
    ahead for ``--parent continue``), the others each in a sandbox started from the snapshot, lent to
    them in order as they come up."""
    from .turns import Ready, in_turns

    continues = int(fork == ROOT_FORK and bt.spec.parent == "continue")

    async def one(i: int, turn: Any) -> bool:
        node = todo[i]
        if i == 0:
            return await _child(bt, sandbox, fork, node, ref, fresh=not dirty, ahead=continues,
                                after_agent=turn.hand_over)
        async with ready.take() as lent:
            if not isinstance(lent, BaseException):
                await turn.wait()
                return await _child(bt, lent.sandbox, fork, node, ref, fresh=True, after_agent=turn.hand_over)
            # started again in its turn, a failure then recorded on the child
            log.info("%s: its sandbox did not start from the snapshot ahead (%s); again in its turn", node, lent)
            await turn.wait()
            box = bt.req.backend.create(bt.session_spec())
            try:
                return await _child(bt, box, fork, node, ref, fresh=False, after_agent=turn.hand_over)
            finally:
                await stop_surely(box)

    async with Ready(lambda: _snapshot_session(bt, ref), len(todo) - 1) as ready:
        await in_turns(len(todo), one)


def _snapshot_session(bt: BranchedTrial, ref: str) -> Any:
    """A sandbox session started straight from snapshot ``ref`` (``start_from_snapshot`` backends)."""
    async def from_snapshot(box: Sandbox) -> Sandbox:
        await box.restore(ref)
        return box

    return sandbox_session(bt.req.backend, bt.session_spec(), prepare=from_snapshot)


async def _isolated_child(bt: BranchedTrial, fork: str, node: str, ref: str | None) -> bool:
    """A child in a sandbox of its own: started straight from the snapshot where the backend can
    (``start_from_snapshot``), else started from the task image and restored."""
    assert ref is not None, "an isolated fork has a sandbox snapshot (plan_branch refuses it otherwise)"
    if bt.req.backend.capabilities.start_from_snapshot:
        async with _snapshot_session(bt, ref) as session:
            return await _child(bt, session.sandbox, fork, node, ref, fresh=True)
    async with sandbox_session(bt.req.backend, bt.session_spec()) as session:
        return await _child(bt, session.sandbox, fork, node, ref, fresh=False)


async def prepare_spare(sandbox: Sandbox, ref: str, count: int) -> None:
    """Have the backend start the next ``count`` restores' sandboxes ahead, where it can (``prepare_restore``)."""
    if isinstance(sandbox, PreparesRestore):
        await sandbox.prepare_restore(ref, count)


async def _child(bt: BranchedTrial, sandbox: Sandbox, fork: str, node: str, ref: str | None, *, fresh: bool,
                 ahead: int = 0, after_agent: Callable[[], None] | None = None) -> bool:
    """Run one child (or only its nested fork when the child itself finished earlier); True when it
    ended with a reward or a verifier verdict. ``fresh``: the sandbox is at ``ref`` already (a
    retry restores all the same); ``ahead``: restores of ``ref`` that follow, started ahead;
    ``after_agent``: called when its agent has stopped (a turn handed on)."""
    tree = bt.tree
    spec_child = next(c for c in bt.spec.children if c.label == node)
    parent_node = tree.tree.fork(fork).parent_node
    at = tree.tree.checkpoint_after_prompt if parent_node is None else 0
    prompts = child_prompts(spec_child, at, bt.prompts, bt.task_prompts)
    paths = child_paths(bt.paths, fork, node)
    nested_id = fork_id(node)
    nested = tree.tree.fork(nested_id)
    done_before = tree.observation(node)
    replay = done_before is not None and done_before.is_finished
    if replay:  # only its nested fork is unfinished: rebuild its state in a scratch folder
        paths = child_paths(bt.paths, fork, node)
        paths = type(paths)(paths.root / ".replay", trial=paths.trial, node=f"{node}.replay")
    run = ChildRun(req=bt.req, paths=paths, fork=fork, parent_node=parent_node, prompts=prompts,
                   prompt_source=tree.tree.node(node).prompt_source, installed=bt.installed,
                   resume_session=tree.tree.fork(fork).session_id if bt.spec.resume_session else None,
                   clear_logs=fork not in bt.clean_forks, after_agent=after_agent)
    nested_ref: list[str | None] = []

    async def snapshot_nested() -> None:
        if nested is not None and not tree.fork_done(nested_id):
            nested_ref.append(await fork_point(bt, sandbox, nested_id))
            tree.set_fork(nested_id, snapshot=nested_ref[0], snapshot_kept=bt.spec.retain_snapshots,
                          status="running", session_id=run.session_id)

    async def nested_fork() -> None:
        if nested_ref:
            await run_fork(bt, sandbox, nested_id, nested_ref[0], dirty=True)

    at_ref = fresh

    async def restore() -> None:
        nonlocal at_ref
        if not at_ref:
            await back_to(bt, sandbox, fork, ref)
        at_ref = False
        if ahead and ref is not None:
            await prepare_spare(sandbox, ref, ahead)

    obs = await run_child(run, sandbox, restore=restore,
                          before_verify=snapshot_nested, after_verify=nested_fork,
                          retries=bt.spec.child_retries, previous=done_before)
    if replay:
        import shutil

        shutil.rmtree(paths.root, ignore_errors=True)
        return True
    return obs.is_finished


def branch_block(bt: BranchedTrial) -> dict[str, Any]:
    """The ``branch`` block of a branched trial's ``result.json``: where the tree is and how it ended."""
    tree = bt.tree
    children = {n.id: tree.observation(n.id) for n in tree.tree.nodes}
    rewards = [o.reward for o in children.values() if o is not None and o.reward is not None]
    return {"tree": "tree.json", "parent": tree.tree.parent_mode, "forks": len(tree.tree.forks),
            "children": len(children), "finished": sum(1 for o in children.values() if o and o.is_finished),
            "best_reward": max(rewards) if rewards else None}
