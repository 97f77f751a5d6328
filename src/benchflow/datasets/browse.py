"""What ``bench hub list|show|inspect|check`` read from a registry (a file, a URL or a BenchFlow Hub)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError, DatasetError

from . import task_cache
from .registry import DatasetVersion, parse_dataset_ref
from .registry_load import LoadedRegistry, open_dataset
from .resolve import fetch_resolved, fetch_tasks


def version_row(version: DatasetVersion) -> dict[str, Any]:
    return {"name": version.name, "version": version.version, "n_tasks": len(version.tasks),
            "bench_version": version.bench_version, "description": version.description}


def list_versions(loaded: LoadedRegistry, search: str | None = None, limit: int | None = None) -> list[DatasetVersion]:
    """Dataset versions in registry order, those matching ``search`` (name or description) only."""
    needle = (search or "").lower()
    found = [v for v in loaded.versions
             if not needle or needle in v.name.lower() or needle in (v.description or "").lower()]
    return found[:limit] if limit is not None else found


def open_version(spec: str, version: str | None, registry: str | None, hub: str | None) -> tuple[LoadedRegistry, DatasetVersion]:
    """The registry and entry for ``name@version`` (or ``name`` with ``--version``).

    Raises:
        ConfigError: no version given (exit 2).
        DatasetError: unknown dataset or version.
    """
    text = spec if "@" in spec or version is None else f"{spec}@{version}"
    ref = parse_dataset_ref(text, flag="SOURCE_ENV")
    if version is not None and ref.version != version:
        raise ConfigError(f"{spec}: the version is given twice ({ref.version} and --version {version}); give one")
    return open_dataset(ref, registry, hub)


def read_task_file(loaded: LoadedRegistry, version: DatasetVersion, path: str) -> tuple[Path, bytes]:
    """``TASK/FILE`` of ``version``, fetched into the cache if need be; (file path, its bytes).

    Raises:
        ConfigError: a path that is not TASK/FILE inside the task.
        DatasetError: no such task, or no such file in it.
    """
    task_name, _, rel = path.strip("/").partition("/")
    tasks = {t.name: t for t in version.tasks}
    if task_name not in tasks:
        shown = ", ".join(sorted(tasks)[:8])
        raise DatasetError(f"{version.ref}: no task {task_name!r} (--path TASK/FILE; tasks: {shown})")
    parts = [p for p in rel.split("/") if p]
    if any(p in {".", ".."} for p in parts):
        raise ConfigError(f"--path {path!r}: give TASK/FILE inside the task, e.g. {task_name}/task.md")
    home = fetch_tasks(version, loaded, [tasks[task_name]])[0]
    target = home.joinpath(*parts) if parts else home / "task.md"
    if not target.is_file() or target.is_symlink():
        files = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file())
        raise DatasetError(f"{version.ref}: {task_name} has no file {rel or 'task.md'!r} "
                           f"(it has: {', '.join(files[:10])})")
    return target, target.read_bytes()


def representative(version: DatasetVersion, n: int) -> list[Any]:
    """``n`` tasks spread evenly over the version's tasks in name order (deterministic)."""
    tasks = sorted(version.tasks, key=lambda t: t.name)
    if n >= len(tasks):
        return tasks
    return [tasks[(i * len(tasks)) // n] for i in range(n)]


def check_rows(loaded: LoadedRegistry, *, per_dataset: int, level: str, limit: int | None,
               cache_dir: Path | None) -> list[dict[str, Any]]:
    """One row per selected task: its pin (``inventory``), plus fetch, digest and structural check (``check``)."""
    from benchflow.tasks.check import check_task
    from benchflow.tasks.digest import task_digest

    selected = [(v, t) for v in loaded.versions for t in representative(v, per_dataset)]
    if limit is not None:
        selected = selected[:limit]
    rows = []
    for version, task in selected:
        row: dict[str, Any] = {"dataset": version.name, "version": version.version, "task": task.name,
                               "digest": task.digest, "git_url": task.git_url, "git_commit_id": task.git_commit_id,
                               "path": task.path, "archive_url": task.archive_url, "level": level}
        if level == "check":
            row.update(_check_one(loaded, version, task, cache_dir, check_task, task_digest))
        else:
            row["ok"] = True
        rows.append(row)
    return rows


def _check_one(loaded: LoadedRegistry, version: DatasetVersion, task: Any, cache_dir: Path | None,
               check_task: Any, task_digest: Any) -> dict[str, Any]:
    import contextlib

    scope = task_cache.cache_at(cache_dir) if cache_dir is not None else contextlib.nullcontext()
    with scope:
        try:
            resolved = fetch_resolved(version, loaded, [task])[0][0]  # a Harbor task: its digest is computed
        except DatasetError as exc:
            return {"ok": False, "digest_ok": False, "issues": [str(exc)]}
        home = task_cache.task_home(resolved)
        found = task_digest(home)
    if found != resolved.digest:
        return {"ok": False, "digest_ok": False, "issues": [f"cached content digest {found} != {resolved.digest}"]}
    report = check_task(home, level="structural")
    return {"ok": report.ok, "digest_ok": True, "digest": resolved.digest, "git_commit_id": resolved.git_commit_id,
            "issues": report.issues, "warnings": report.warnings}
