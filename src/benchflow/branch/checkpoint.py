"""``--from-checkpoint TRIAL_DIR [--fork ID|prompt:N]``: which kept snapshot a new branch starts from."""

from __future__ import annotations

from pathlib import Path

from benchflow.jobs.layout import TrialPaths

from .spec import BranchSpec, BranchSpecError
from .tree import TreeFile


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
