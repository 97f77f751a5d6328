"""The branch tree of a trial for the viewer's trial page: forks and children (``bench branch``, or a
``bench run`` checkpoint retry), each child with its reward and the viewer id of its folder, so the page
can link to the child's own trajectory. Reads only the job folder (:mod:`benchflow.branch.view`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths


def branch_tree(path: Path, ident: Callable[[Path], str]) -> dict[str, Any] | None:
    """``benchflow.branch-view/1`` of the trial at ``path`` plus each child's ``id``; None when the
    trial was not branched (no tree.json) or its tree cannot be read."""
    from benchflow.branch.view import NotBranched, branch_view

    trial = TrialPaths(path)
    if not trial.tree.is_file():
        return None
    try:
        view = branch_view(trial)
    except NotBranched:
        return None
    for fork in view["forks"]:
        for child in fork["children"]:
            folder = path / child["path"] if child.get("path") else None
            child["id"] = ident(folder) if folder is not None and folder.is_dir() else None
    return view
