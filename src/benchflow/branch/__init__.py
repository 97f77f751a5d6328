"""Checkpoints and branching: fork an agent run at a snapshot into labelled, scored children.

``run_branch(BranchSpec)`` is the library call behind ``bench branch``;
``view.branch_views(path)`` reads branched trials back (``bench eval branches``).
A child is "restore the snapshot → agent phase → verifier phase → record",
composed from :mod:`benchflow.jobs.phases` inside :func:`benchflow.sandbox.session.sandbox_session`.
"""

from __future__ import annotations

from .run import BranchOutcome, run_branch, run_branch_async
from .spec import BranchSpec, ChildSpec, parse_child

__all__ = ["BranchOutcome", "BranchSpec", "ChildSpec", "parse_child", "run_branch", "run_branch_async"]
