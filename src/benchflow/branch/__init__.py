"""Checkpoints and branching: fork an agent run at a snapshot into labelled, scored children.

``run_branch(BranchSpec)`` is the library call behind ``bench branch``;
``view.branch_views(path)`` reads branched trials back (``bench eval branches``).
A branched trial is a mode of the one trial runner (:mod:`.mode`, run by ``jobs.trial.run_trial``);
a child is "restore the snapshot → agent phase → verifier phase → record", composed from
:mod:`benchflow.jobs.phases` on a sandbox the trial's session (or a child's own) holds.
"""

from __future__ import annotations

from .run import BranchOutcome, run_branch, run_branch_async
from .spec import BranchSpec, ChildSpec, parse_child

__all__ = ["BranchOutcome", "BranchSpec", "ChildSpec", "parse_child", "run_branch", "run_branch_async"]
