"""A branched trial's forks: each fork's snapshot, then its unfinished children, nested forks included.

A fork's snapshot is the declared environment state (:mod:`.env_state`, with
``--snapshot-layers environment|both``) and the sandbox snapshot (unless
``environment``). Sequential children run in turns where the backend starts
sandboxes from a snapshot (:mod:`.turns`: one agent at a time, each later child
in a sandbox started ahead from the snapshot); otherwise they restore the one
sandbox, asking the backend to start the next restore's sandbox ahead
(``prepare_restore``) while a child runs. A child with nested children is
snapshotted after its agent phase, and its fork runs while its sandbox still
exists. Every function takes the trial's :class:`~.mode.BranchMode` (``bt``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from benchflow.jobs.layout import TrialPaths
from benchflow.sandbox.base import Sandbox
from benchflow.sandbox.optional import PreparesRestore
from benchflow.sandbox.session import SandboxSession, sandbox_session, stop_surely

from . import env_state
from .child import ChildRun, clear_agent_logs, run_child
from .tree import ROOT_FORK, child_paths, child_prompts, fork_id

if TYPE_CHECKING:
    from .mode import BranchMode
    from .turns import Turn

log = logging.getLogger(__name__)


async def fork_point(bt: BranchMode, sandbox: Sandbox, fork: str) -> str | None:
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


async def back_to(bt: BranchMode, sandbox: Sandbox, fork: str, ref: str | None) -> None:
    """Put ``sandbox`` back as it was at ``fork``: the sandbox snapshot, then the declared state."""
    if ref is not None:
        await sandbox.restore(ref)
    if bt.env_state is not None:
        await env_state.restore(sandbox, bt.env_state, state_folder(bt.paths, fork))


def state_folder(paths: TrialPaths, fork: str) -> Path:
    """Where ``fork``'s declared environment state and its manifest are kept."""
    return paths.root / "branches" / fork / "state"


async def run_fork(bt: BranchMode, sandbox: Sandbox, fork: str, ref: str | None, *, dirty: bool) -> None:
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


def _in_turns(bt: BranchMode, fork: str, todo: list[str], ref: str | None) -> bool:
    """Whether a sequential fork's children can run in turns (:mod:`.turns`): each in a sandbox
    started from the snapshot, every child standing alone."""
    tree = bt.tree.tree
    return (ref is not None and len(todo) > 1 and bt.req.backend.capabilities.start_from_snapshot
            and not bt.spec.stop_on_child_failure and bt.env_state is None
            and bt.session_spec().compose_file is None
            and all(tree.fork(fork_id(node)) is None for node in todo))


async def _run_in_turns(bt: BranchMode, sandbox: Sandbox, fork: str, todo: list[str], ref: str, *,
                        dirty: bool) -> None:
    """A fork's children in turns (:mod:`.turns`): the first in the trial's sandbox (a spare started
    ahead for ``--parent continue``), the others each in a sandbox started from the snapshot, lent to
    them in order as they come up."""
    from .turns import Ready, in_turns

    continues = int(fork == ROOT_FORK and bt.spec.parent == "continue")

    async def one(i: int, turn: Turn) -> bool:
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


def _snapshot_session(bt: BranchMode, ref: str) -> AbstractAsyncContextManager[SandboxSession]:
    """A sandbox session started straight from snapshot ``ref`` (``start_from_snapshot`` backends)."""
    async def from_snapshot(box: Sandbox) -> Sandbox:
        await box.restore(ref)
        return box

    return sandbox_session(bt.req.backend, bt.session_spec(), prepare=from_snapshot)


async def _isolated_child(bt: BranchMode, fork: str, node: str, ref: str | None) -> bool:
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


async def _child(bt: BranchMode, sandbox: Sandbox, fork: str, node: str, ref: str | None, *, fresh: bool,
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
