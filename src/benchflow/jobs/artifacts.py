"""A task's ``artifacts``: files the agent made, copied out into the trial's ``artifacts/`` after
the agent phase (contracts §1.4, §2.1).

First ``/logs/artifacts`` (where an agent puts what it wants kept), then each
declared artifact: a string is a ``source``; ``source`` is a sandbox path
(relative ones are under the workspace), ``destination`` a path inside
``artifacts/`` (default: the source's name), ``exclude`` glob patterns matched
against each copied path (relative to the source) and each name. Everything
goes through the sandbox's safe copy-out (links that lead out, devices and
FIFOs dropped; per-file and per-copy caps), so an artifact can never write
outside the trial folder. A missing source is noted, not an error.
"""

from __future__ import annotations

import fnmatch
import posixpath
import shutil
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError

AGENT_ARTIFACTS = "/logs/artifacts"
NOT_COPIED = object()
"""``collect_artifacts``'s default: ``/logs/artifacts`` is still to be copied (an error means no such folder)."""


def _spec(entry: Any) -> tuple[str, str | None, list[str]]:
    if isinstance(entry, str):
        return entry, None, []
    return entry.source, entry.destination, list(entry.exclude)


def _destination(source: str, destination: str | None) -> str | None:
    """The relative destination inside artifacts/, or None when it would lead out."""
    rel = destination if destination is not None else (posixpath.basename(source.rstrip("/")) or "root")
    rel = posixpath.normpath(rel.strip("/")) if rel.strip("/") else "."
    if rel.startswith("..") or rel == ".":
        return None
    return rel


def _exclude(root: Path, patterns: list[str]) -> int:
    """Remove what matches ``patterns`` under ``root``; returns how many entries went."""
    if not patterns or not root.exists():
        return 0
    removed = 0
    for path in sorted(root.rglob("*"), key=lambda p: len(p.parts)):
        if not path.exists() and not path.is_symlink():
            continue  # inside a folder removed already
        rel = path.relative_to(root).as_posix()
        if any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(path.name, p) for p in patterns):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
            removed += 1
    if root.is_file() and any(fnmatch.fnmatch(root.name, p) for p in patterns):
        root.unlink()
        removed += 1
    return removed


async def collect_artifacts(task: Any, sandbox: Any, artifacts_dir: Path,
                            agent_copy: Any = NOT_COPIED) -> dict[str, Any] | None:
    """Copy ``/logs/artifacts`` and the task's declared artifacts into ``artifacts_dir``; a note of
    what was missing, refused, excluded or left behind by the copy (None when all came back).
    ``agent_copy``: what copying ``/logs/artifacts`` gave already (a report, or the error of its copy,
    from :func:`~benchflow.sandbox.downloads.get_all`); else it is copied here."""
    from benchflow.sandbox.downloads import one_by_one

    note: dict[str, Any] = {}
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    if agent_copy is NOT_COPIED:
        agent_copy = (await one_by_one(sandbox, [(AGENT_ARTIFACTS, artifacts_dir)]))[0]
    if agent_copy is not None and not isinstance(agent_copy, Exception) and agent_copy.note() is not None:
        note[AGENT_ARTIFACTS] = agent_copy.note()
    for entry in task.config.artifacts:
        source, destination, exclude = _spec(entry)
        remote = source if source.startswith("/") else posixpath.join(sandbox.workdir, source)
        rel = _destination(source, destination)
        if rel is None:
            note[source] = {"refused": f"destination {destination!r} leads out of artifacts/"}
            continue
        target = artifacts_dir / rel
        if target.exists() or target.is_symlink():
            shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            report = await sandbox.get(remote, target)
        except FileNotFoundError:
            note[source] = {"missing": remote}
            continue
        except BenchError as exc:
            note[source] = {"failed": str(exc)[:300]}
            continue
        entry_note: dict[str, Any] = {}
        if report is not None and report.note() is not None:
            entry_note["copy"] = report.note()
        excluded = _exclude(target, exclude)
        if excluded:
            entry_note["excluded"] = excluded
        if entry_note:
            note[source] = entry_note
    return note or None
