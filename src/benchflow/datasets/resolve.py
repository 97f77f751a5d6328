"""``--dataset name@version``: from a registry entry to verified task folders in the cache.

Resolution (contracts §7.3): the version is matched by name and version string;
its bench-version range is checked; tasks already in the content-addressed cache
are reused (no git, no network); the others are fetched at their pinned commit
(or archive) and enter the cache only when their digest matches. The plan digests
every task again before any sandbox starts. Tasks of a Harbor entry (no digest)
are fetched by ``harbor_fetch`` and recorded under the digest of what was fetched.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import DatasetError

from . import task_cache
from .harbor_fetch import FetchedGroup, resolve_harbor
from .registry import DatasetVersion, RegistryTask, parse_dataset_ref
from .registry_load import LoadedRegistry, open_dataset

GITHUB_PREFIX = "https://github.com/"


@dataclass
class TaskSource:
    """Where a run's tasks come from, once fetched: folders to load and what to record about them."""

    dirs: list[Path]
    tasks_dir: str | None = None
    source: dict[str, Any] | None = None
    """``config.json``/``summary.json`` ``source``: the registry or repository, commit and path."""
    dataset_name: str | None = None
    dataset_version: str | None = None
    registry_digests: dict[str, str] = field(default_factory=dict)
    """Task name → the digest the registry pins, or for a Harbor entry the digest of what was fetched
    (what each planned task must match)."""
    warnings: list[str] = field(default_factory=list)
    """For the run card: tasks that are not pinned (a Harbor entry at HEAD or a branch)."""

    def provenance(self) -> dict[str, Any]:
        return {"source": self.source, "dataset_name": self.dataset_name, "dataset_version": self.dataset_version}


def check_bench_version(version: DatasetVersion, ignore: bool) -> None:
    """Refuse a dataset validated for other bench versions, unless ``--ignore-bench-version``.

    Raises:
        DatasetError: the running base version is outside ``bench_version``.
    """
    if not version.bench_version or ignore:
        return
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    from benchflow import __version__

    try:
        allowed = SpecifierSet(version.bench_version)
    except InvalidSpecifier:
        raise DatasetError(f"{version.ref}: bench_version {version.bench_version!r} is not a PEP 440 "
                           "specifier") from None
    base = Version(__version__).base_version
    if not allowed.contains(base, prereleases=True):
        raise DatasetError(f"{version.ref} was validated with bench {version.bench_version}, this is {base}; "
                           "pass --ignore-bench-version to run it anyway")


def _check_pins(version: DatasetVersion, registry: LoadedRegistry) -> None:
    names = [t.name for t in version.tasks]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DatasetError(f"{version.ref}: two tasks named {dupes[0]!r}; task names must be unique")
    git = [t for t in version.tasks if not t.archive_url and t.digest is not None]  # Harbor's may differ
    pins = {(t.git_url, t.git_commit_id) for t in git}
    if len(pins) > 1:
        raise DatasetError(f"{version.ref}: tasks pin {len(pins)} repositories or commits; a dataset version "
                           "pins one (git_url, git_commit_id)")
    parents = {str(Path(t.path or "").parent) for t in git}
    if len(parents) > 1:
        raise DatasetError(f"{version.ref}: tasks live in {len(parents)} folders; a dataset version keeps its "
                           "tasks in one parent folder")
    if not registry.local:
        for task in [t for t in version.tasks if t.git_url]:
            if not (task.git_url or "").startswith(GITHUB_PREFIX):
                raise DatasetError(f"{version.ref}: task {task.name}: git_url {task.git_url!r} is not a "
                                   "github.com repository (a registry from the network may pin github.com only)")


def _fetch_git(tasks: list[RegistryTask]) -> None:
    from .git_fetch import sparse_checkout

    if not tasks:
        return
    url, commit = tasks[0].git_url or "", tasks[0].git_commit_id or ""
    work = task_cache.scratch_dir("clone-")
    try:
        got = sparse_checkout(url, commit, [t.path or "" for t in tasks], work)
        if got != commit:
            raise DatasetError(f"{url}: fetched commit {got}, but the registry pins {commit}")
        for task in tasks:
            task_cache.place(task, work / (task.path or "").strip("/"), f"{url}@{commit[:12]}:{task.path}", work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fetch_archive(task: RegistryTask, registry: LoadedRegistry) -> None:
    from .archive_fetch import unpack_archive

    url = registry.resolve_url(task.archive_url or "")
    if not registry.local and not url.startswith(("http://", "https://")):
        raise DatasetError(f"task {task.name}: archive_url {task.archive_url!r} must be an http(s) URL")
    work = task_cache.scratch_dir("archive-")
    try:
        task_cache.place(task, unpack_archive(url, work, f"task {task.name}"), url, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fetch_resolved(version: DatasetVersion, registry: LoadedRegistry,
                   tasks: list[RegistryTask]) -> tuple[list[RegistryTask], list[FetchedGroup]]:
    """Put ``tasks`` of ``version`` in the cache (those not there yet: fetched and digest-checked);
    the tasks with every digest known (a Harbor entry's: of what was fetched), and Harbor's fetches.

    Raises:
        DatasetError: the version breaks a pinning rule, or a task cannot be fetched or does not match.
    """
    _check_pins(version, registry)
    ours = [t for t in tasks if t.digest is not None]
    missing = [t for t in ours if task_cache.cached(t) is None]
    _fetch_git([t for t in missing if not t.archive_url])
    for task in missing:
        if task.archive_url:
            _fetch_archive(task, registry)
    harbor, groups = resolve_harbor([t for t in tasks if t.digest is None]) if len(ours) < len(tasks) else ([], [])
    known = {t.name: t for t in [*ours, *harbor]}
    return [known[t.name] for t in tasks], groups


def fetch_tasks(version: DatasetVersion, registry: LoadedRegistry, tasks: list[RegistryTask]) -> list[Path]:
    """The cache folders of ``tasks`` of ``version``, fetched first if need be (see ``fetch_resolved``)."""
    return [task_cache.task_home(t) for t in fetch_resolved(version, registry, tasks)[0]]


def _harbor_source(tasks: list[RegistryTask], groups: list[FetchedGroup]) -> dict[str, Any]:
    parents = {str(Path(t.path or "").parent) for t in tasks if t.git_url}
    first = groups[0]
    return {"repo": first.git_url, "commit": first.commit, "path": parents.pop() if len(parents) == 1 else None,
            "digests": "computed from the tasks fetched (a Harbor entry pins no digest)",
            "repos": [g.record() for g in groups]}


def resolve_dataset(text: str, *, registry: str | None = None, hub: str | None = None,
                    ignore_bench_version: bool = False) -> TaskSource:
    """Fetch (or reuse from the cache) every task of dataset ``text`` (``name@version``).

    Raises:
        ConfigError: a malformed spec or conflicting registry flags (exit 2).
        DatasetError: unknown dataset/version, out-of-range bench version, a task that cannot be fetched,
            or one whose content does not match its digest (exit 1).
    """
    ref = parse_dataset_ref(text)
    loaded, version = open_dataset(ref, registry, hub)
    if not version.tasks:
        raise DatasetError(f"{version.ref}: the registry lists no task for it")
    check_bench_version(version, ignore_bench_version)
    tasks, groups = fetch_resolved(version, loaded, version.tasks)
    first = version.tasks[0]
    source: dict[str, Any] = {"registry": loaded.location, "dataset": version.ref}
    if groups:
        source.update(_harbor_source(tasks, groups))
    elif first.git_url:
        source.update(repo=first.git_url, commit=first.git_commit_id, path=str(Path(first.path or "").parent))
    return TaskSource(dirs=[task_cache.task_home(t) for t in tasks], tasks_dir=None, source=source,
                      dataset_name=version.name, dataset_version=version.version,
                      registry_digests={t.name: t.digest or "" for t in tasks},
                      warnings=[g.warning(version.ref) for g in groups if not g.pinned])
