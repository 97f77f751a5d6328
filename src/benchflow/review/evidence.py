"""The evidence a reviewer reads: a copy of one rollout, never the rollout itself.

``trial/`` is the trial folder (without its frozen workspace and earlier scoring
revisions), ``workspace/`` the frozen workspace (``--freeze-workspace``), and
``task/`` the task definition, only when the user names a trusted tasks root and
the copy's digest equals the digest the rollout recorded: a task path written
inside a rollout is untrusted input and is never read. Only regular files are
copied; symbolic links and special files are left out and counted.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths

_TRIAL_SKIP = frozenset({"evidence", "scoring", ".upload"})


@dataclass
class Evidence:
    root: Path
    trial_files: int = 0
    workspace_files: int = 0
    task: dict[str, Any] = field(default_factory=lambda: {"included": False, "reason": "no --tasks-root given"})
    skipped: list[str] = field(default_factory=list)
    """Relative paths left out (symbolic links, special files)."""

    @property
    def task_dir(self) -> Path | None:
        return self.root / "task" if self.task["included"] else None

    def record(self) -> dict[str, Any]:
        return {"trial_files": self.trial_files, "workspace_files": self.workspace_files, "task": self.task,
                "skipped": self.skipped[:50], "n_skipped": len(self.skipped)}


def _copy_tree(src: Path, dest: Path, skip_top: frozenset[str], skipped: list[str], label: str) -> int:
    """Copy the regular files under ``src`` (no link followed); returns how many."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        here = Path(dirpath)
        rel_dir = here.relative_to(src)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in skip_top]
        for name in list(dirnames):
            if os.path.islink(here / name):
                dirnames.remove(name)
                skipped.append(f"{label}/{(rel_dir / name).as_posix()}")
        for name in filenames:
            full = here / name
            rel = (rel_dir / name).as_posix()
            if not stat.S_ISREG(os.lstat(full).st_mode):
                skipped.append(f"{label}/{rel}")
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(full, target, follow_symlinks=False)
            count += 1
    return count


def _admit_task(task_dir: Path | None, recorded_digest: str | None, dest: Path) -> dict[str, Any]:
    """Copy the trusted task and keep the copy only when its digest is the one the rollout recorded."""
    from benchflow.tasks.digest import task_digest, task_files

    if task_dir is None:
        return {"included": False, "reason": "no task of that name under --tasks-root"}
    if not recorded_digest:
        return {"included": False, "reason": "the rollout recorded no task digest, so no task copy can be admitted"}
    for rel, full in task_files(task_dir):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(full, target, follow_symlinks=False)
    copied = task_digest(dest) if dest.is_dir() else None
    if copied != recorded_digest:
        shutil.rmtree(dest, ignore_errors=True)
        return {"included": False, "reason": f"task under --tasks-root has digest {copied}, the rollout ran "
                                             f"{recorded_digest}: not admitted"}
    return {"included": True, "digest": copied, "source": str(task_dir)}


def collect_evidence(trial: TrialPaths, dest: Path, *, task_dir: Path | None, tasks_root_given: bool,
                     recorded_digest: str | None) -> Evidence:
    """Write the evidence of ``trial`` under ``dest`` (``trial/``, ``workspace/``, ``task/``)."""
    evidence = Evidence(root=dest)
    (dest / "trial").mkdir(parents=True, exist_ok=True)
    (dest / "workspace").mkdir(exist_ok=True)
    evidence.trial_files = _copy_tree(trial.root, dest / "trial", _TRIAL_SKIP, evidence.skipped, "trial")
    if trial.evidence_workspace.is_dir() and not trial.evidence_workspace.is_symlink():
        evidence.workspace_files = _copy_tree(trial.evidence_workspace, dest / "workspace", frozenset(),
                                              evidence.skipped, "workspace")
    if tasks_root_given:
        evidence.task = _admit_task(task_dir, recorded_digest, dest / "task")
    return evidence
