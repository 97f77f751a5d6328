"""Tasks of a Harbor registry entry: pinned by a git commit (or not at all) but not by a digest.

Harbor's ``registry.json`` names each task by ``git_url``, ``git_commit_id`` and
``path`` only. The tasks are grouped by ``(git_url, git_commit_id)`` and each
group is fetched in one sparse, shallow ``git`` fetch; each task enters the
content-addressed cache under the digest of what was fetched (the function
``bench tasks digest`` uses), and the cache remembers the digest each
``(git_url, commit, path)`` gave, so a later run of a group pinned to a commit
finds every task there with no git and no network.

A task whose ``git_commit_id`` is missing (Harbor: the repository's HEAD) or is
a branch or tag is not pinned: it is fetched again on every run, the commit the
fetch got is recorded, and the run card says so.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

from benchflow.errors import DatasetError

from . import task_cache
from .registry import RegistryTask


@dataclass
class FetchedGroup:
    """One ``(git_url, git_commit_id)`` of a Harbor entry, as fetched (or found in the cache)."""

    git_url: str
    requested: str | None
    """The registry's ``git_commit_id``: a full SHA, a branch or tag, or None (the repository's HEAD)."""
    commit: str
    """The commit the tasks were read at (the one fetched, or the pinned one when the cache served them)."""
    tasks: list[str] = field(default_factory=list)
    from_cache: bool = False

    @property
    def pinned(self) -> bool:
        return self.requested is not None and self.requested.lower() == self.commit

    def record(self) -> dict[str, object]:
        return {"repo": self.git_url, "requested": self.requested or "HEAD", "commit": self.commit,
                "pinned": self.pinned, "tasks": len(self.tasks)}

    def warning(self, dataset: str) -> str:
        noun = "task" if len(self.tasks) == 1 else "tasks"
        return (f"{dataset}: {len(self.tasks)} {noun} of {self.git_url} not pinned: the repository's "
                f"{self.requested or 'HEAD'} when fetched; the commit fetched ({self.commit}) is recorded")


def _from_cache(url: str, commit: str, tasks: list[RegistryTask]) -> list[RegistryTask] | None:
    found = []
    for task in tasks:
        digest = task_cache.pinned_digest(url, commit, task.path or "")
        resolved = task.model_copy(update={"digest": digest, "git_commit_id": commit}) if digest else None
        if resolved is None or task_cache.cached(resolved) is None:
            return None
        found.append(resolved)
    return found


def _fetch(url: str, ref: str, tasks: list[RegistryTask]) -> tuple[str, list[RegistryTask]]:
    from .git_fetch import sparse_checkout

    work = task_cache.scratch_dir("clone-")
    try:
        got = sparse_checkout(url, ref, [t.path or "" for t in tasks], work)
        if tasks[0].pinned and got != ref.lower():
            raise DatasetError(f"{url}: fetched commit {got}, but the registry pins {ref}")
        resolved = []
        for task in tasks:
            where = f"{url}@{got[:12]}:{task.path}"
            home = task_cache.place(task, work / (task.path or "").strip("/"), where, work)
            digest = "sha256:" + home.parent.name
            task_cache.record_pin(url, got, task.path or "", digest)
            resolved.append(task.model_copy(update={"digest": digest, "git_commit_id": got}))
        return got, resolved
    finally:
        shutil.rmtree(work, ignore_errors=True)


def resolve_harbor(tasks: list[RegistryTask]) -> tuple[list[RegistryTask], list[FetchedGroup]]:
    """``tasks`` (no digest) with the digest and the commit of what was fetched filled in, in order.

    Raises:
        DatasetError: a local-path task, a repository or commit that cannot be fetched, or a task
            missing at its path; the message names it.
    """
    groups: dict[tuple[str, str | None], list[RegistryTask]] = {}
    for task in tasks:
        if not task.git_url:
            raise DatasetError(f"task {task.name}: a Harbor local-path task (path {task.path}, no git_url); "
                               "registry tasks are fetched from git: run the folder itself (bench run PATH)")
        groups.setdefault((task.git_url, task.git_commit_id), []).append(task)
    resolved: dict[str, RegistryTask] = {}
    fetched: list[FetchedGroup] = []
    for (url, requested), members in groups.items():
        names = [t.name for t in members]
        cached = _from_cache(url, requested.lower(), members) if members[0].pinned and requested else None
        if cached is not None:
            fetched.append(FetchedGroup(url, requested, requested.lower(), names, from_cache=True))
        else:
            commit, cached = _fetch(url, requested or "HEAD", members)
            fetched.append(FetchedGroup(url, requested, commit, names))
        resolved.update((t.name, t) for t in cached)
    return [resolved[t.name] for t in tasks], fetched
