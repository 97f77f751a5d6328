"""Tasks that come from elsewhere: registry datasets (``-d name@version``) and git repositories.

``resolve_source(spec)`` turns a run's ``dataset`` / ``source_repo`` / repository
target into task folders in the user cache (``<cache>/datasets/``), fetched once
and verified against their pinned digests; None means the run's tasks are local
folders. The registry format is in ``docs/registry.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchflow.errors import ConfigError

if TYPE_CHECKING:
    from .resolve import TaskSource

__all__ = ["TaskSource", "resolve_dataset", "resolve_source"]


def __getattr__(name: str) -> Any:
    """``TaskSource`` and ``resolve_dataset`` from :mod:`.resolve`, imported when first asked for: a
    run of local task folders never loads the registry's models."""
    if name in ("TaskSource", "resolve_dataset"):
        from . import resolve

        return getattr(resolve, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_source(spec: Any) -> TaskSource | None:
    """The fetched tasks of ``spec`` (a RunSpec), or None when its tasks are local folders.

    Raises:
        ConfigError: a malformed dataset spec or repository target (exit 2).
        DatasetError: a dataset or repository that cannot be fetched or verified (exit 1).
    """
    if spec.dataset:
        from .resolve import resolve_dataset

        return resolve_dataset(spec.dataset, registry=spec.registry, hub=spec.hub,
                               ignore_bench_version=spec.ignore_bench_version)
    if spec.source_repo:
        from .repo_targets import fetch_repo, source_repo_target

        return fetch_repo(source_repo_target(spec.source_repo, spec.source_path, spec.source_ref))
    missing = [t for t in spec.targets if not Path(t).expanduser().exists()]
    if not missing:  # local folders only: the fetchers are not imported
        return None
    from .repo_targets import fetch_repo, looks_like_repo, parse_target

    repos = [t for t in missing if looks_like_repo(t)]
    if not repos:
        return None
    if len(spec.targets) > 1:
        raise ConfigError(f"{repos[0]}: a repository target runs alone; give one target per run")
    return fetch_repo(parse_target(repos[0]))
