"""Checkpoints: taking them while prompts are sent, and choosing one to branch from again.

``send_prompts`` sends a stretch of prompts in one agent phase per run between
checkpoints (``--checkpoints``), keeping a retained snapshot after each
checkpoint prompt (at most ``--checkpoint-keep``, oldest deleted) in the
trial's ``tree.json``; ``bench branch`` and ``bench run`` both use it. A
stretch after the first continues the previous stretch's ACP session when the
agent can reload it (``loadSession``), so splitting at a checkpoint does not
cut the conversation. ``start_snapshot`` picks the kept snapshot a
``--from-checkpoint`` branch starts from.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from benchflow.agents.base import AgentOutcome
from benchflow.jobs.layout import TrialPaths
from benchflow.jobs.phases import TrialState, agent_phase
from benchflow.records.branch import Checkpoint

from .spec import BranchSpec, BranchSpecError
from .tree import TreeFile

if TYPE_CHECKING:
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Backend, Sandbox

_COUNTS = ("n_tool_calls", "n_prompts", "n_message_chunks", "n_thought_chunks")
_USAGE = ("n_input_tokens", "n_output_tokens", "n_cache_read_tokens", "n_cache_creation_tokens", "total_tokens",
          "cost_usd")


def start_snapshot(spec: BranchSpec, prompts: list[str]) -> tuple[str, list[str]]:
    """(snapshot reference, the parent's prompts after it) for ``--from-checkpoint``.

    The default is the last kept fork, else the last kept checkpoint.

    Raises:
        BranchSpecError: no tree there, or no kept snapshot of that id.
    """
    folder = Path(spec.from_checkpoint or "").expanduser()
    tree = TreeFile.load(TrialPaths(folder)) if folder.is_dir() else None
    if tree is None:
        raise BranchSpecError(f"--from-checkpoint {folder}: no tree.json there; give a trial folder of an "
                              "earlier bench branch --retain-snapshots run")
    record = tree.tree
    forks = {f.id: (f.snapshot, f.at_prompt) for f in record.forks if f.snapshot_kept and f.snapshot}
    points = {c.id: (c.snapshot, int(c.id.split(":", 1)[1])) for c in record.checkpoints if c.kept and c.snapshot}
    wanted = spec.fork
    if wanted is None:
        chosen = (list(forks.values()) or list(points.values()) or [None])[-1]
    else:
        chosen = forks.get(wanted) or points.get(wanted)
    if chosen is None:
        kept = ", ".join([*forks, *points]) or "none"
        raise BranchSpecError(f"--from-checkpoint {folder}: no kept snapshot {wanted or ''}".rstrip() +
                              f" (kept: {kept}); rerun bench branch with --retain-snapshots or --checkpoints")
    ref, at = chosen
    return ref, list(record.parent_prompts[at:]) or prompts


async def send_prompts(req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, prompts: list[str], start: int,
                       stop: int, points: list[int], keep: int, tree: TreeFile, sink: AcpTrajectoryFile,
                       state: TrialState, timing: dict[str, float]) -> None:
    """Send ``prompts[start:stop]``, one agent phase per stretch between the checkpoint prompts
    ``points``, a retained snapshot kept after each; the outcome on ``state`` counts every stretch."""
    edges = sorted({*(n for n in points if start < n <= stop), stop})
    begin = start
    for edge in edges:
        spent, before = dict(timing), state.outcome
        resume = before.session_id if before is not None and before.load_session else None
        await agent_phase(req, sandbox, paths, prompts[begin:edge], sink, state, timing, resume_session=resume)
        for key in ("agent_setup", "agent_execution"):
            timing[key] = timing.get(key, 0.0) + spent.get(key, 0.0)
        if before is not None and state.outcome is not None and state.outcome is not before:
            _add_counts(state.outcome, before)
        state.installed_by_layer = state.installed_by_layer or state.outcome is not None
        begin = edge
        if edge in points and state.outcome is not None:
            await keep_checkpoint(tree, req.backend, keep, sandbox, edge, state.outcome.session_id)
        if state.error is not None:
            return


def _add_counts(outcome: AgentOutcome, earlier: AgentOutcome) -> None:
    """The earlier stretches' counts and model usage added to this stretch's outcome."""
    for key in _COUNTS:
        setattr(outcome, key, getattr(outcome, key) + getattr(earlier, key))
    for key in _USAGE:
        mine, theirs = outcome.usage.get(key), earlier.usage.get(key)
        if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)):
            outcome.usage[key] = mine + theirs


async def keep_checkpoint(tree: TreeFile, backend: Backend, keep: int, sandbox: Sandbox, prompt: int,
                          session_id: str | None = None) -> None:
    """Snapshot after prompt ``prompt`` (retained), deleting the oldest kept beyond ``keep``."""
    ref = await sandbox.snapshot(retain=True)
    record = tree.tree
    record.checkpoints = [c for c in record.checkpoints if c.id != f"prompt:{prompt}"]
    record.checkpoints.append(Checkpoint(id=f"prompt:{prompt}", snapshot=ref, kept=True, session_id=session_id))
    kept = [c for c in record.checkpoints if c.kept]
    for old in kept[:max(0, len(kept) - keep)]:
        stayed = backend.remove_snapshots([old.snapshot])
        old.kept = False
        if not stayed:
            old.snapshot = None
    tree.save()
