"""Finding and removing the sandboxes BenchFlow left behind (``bench sandbox list|cleanup``, and a
run's removal of what a killed earlier run of its job left).

Every registered backend is asked through its own ``leftovers()``/``remove()``
(see :class:`benchflow.sandbox.base.Backend`); nothing here knows a backend by
name. Which sandboxes go, by default:

- an **orphan** (its owning process on this host is gone, or its pid now
  belongs to another process): removed whatever its age or state;
- **no recorded owner** (made by ``bench sandbox create``, or by a process on
  another host of a shared remote engine): removed once older than ``max_age``;
- held by a **live** process, or **kept** with ``--keep-sandbox``: never, unless
  named with ``--id`` (``--all`` takes kept ones and unowned ones of any age,
  never a live run's).

Snapshots (``bench branch``, ``bench run --checkpoints``) go the same way when
their run is gone and they were not retained (``Backend.stale_snapshots``: what
a ``kill -9`` left); retained ones are ``bench cache``'s to list and clean.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from benchflow.errors import SandboxUnavailable

from .base import Backend, OwnedSandbox

log = logging.getLogger(__name__)


@dataclass
class Scan:
    """What every backend holds: (backend, its rows) for those that could be looked at."""

    found: list[tuple[Backend, list[OwnedSandbox]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Backends skipped because they do not work here (normal, e.g. no Docker on this machine)."""
    errors: list[str] = field(default_factory=list)
    """Configured backends that could not be looked at (reported after the rest)."""

    @property
    def rows(self) -> list[OwnedSandbox]:
        return [row for _, rows in self.found for row in rows]


def scan(backends: list[Backend] | None = None, *, everything: bool = False) -> Scan:
    """Ask each backend (default: every registered one) for its sandboxes; ``everything``: for every
    sandbox it can see (``bench sandbox list --all``: :meth:`Backend.every_sandbox`), with a note for
    each backend that can list only its own."""
    from . import get_backend, names

    result = Scan()
    for backend in backends if backends is not None else [get_backend(n) for n in names()]:
        try:
            rows = backend.every_sandbox() if everything else None
            if rows is None:
                rows = backend.leftovers()
                if everything and (rows or backend.available()[0]):  # not for one that is not here at all
                    result.notes.append(f"{backend.name}: --all lists {backend.all_scope}")
            result.found.append((backend, rows))
        except SandboxUnavailable as exc:
            if backend.configured():
                result.errors.append(f"{backend.name}: {exc}")
            else:
                result.notes.append(f"skipped {backend.name}: {exc}")
    return result


@dataclass
class CleanupReport:
    removed: list[dict] = field(default_factory=list)
    kept: list[dict] = field(default_factory=list)
    """Sandboxes left alone, each with a ``reason``."""
    errors: list[str] = field(default_factory=list)
    dry_run: bool = False
    unmatched_ids: list[str] = field(default_factory=list)


def decide(row: OwnedSandbox, *, max_age_sec: float, everything: bool, ids: list[str],
           now: float) -> tuple[bool, str]:
    """(remove?, why) for one sandbox under the cleanup rules in the module docstring."""
    if any(row.id.startswith(i) or row.name == i for i in ids):
        return True, "named with --id"
    if ids:
        return False, "not named with --id"
    if row.owner_alive is True:
        return False, f"held by a live run ({row.owner})"
    if everything:
        return True, "--all"
    if row.kept:
        return False, "kept with --keep-sandbox (bench sandbox release TRIAL deletes it)"
    if row.owner_alive is False:
        return True, f"orphan: its owner is {row.owner}"
    age = now - row.created
    if age > max_age_sec:
        return True, f"no recorded owner and older than {max_age_sec / 60:g} min"
    return False, f"no recorded owner, {age / 60:.0f} min old (younger than --max-age)"


def cleanup(found: list[tuple[Backend, list[OwnedSandbox]]], *, max_age_sec: float, everything: bool = False,
            ids: list[str] | None = None, dry_run: bool = False) -> CleanupReport:
    """Remove what :func:`decide` says from what :func:`scan` found; with ``dry_run`` only report it."""
    ids = list(ids or [])
    report = CleanupReport(dry_run=dry_run)
    now = time.time()
    seen: set[str] = set()
    for backend, rows in found:
        doomed: list[tuple[OwnedSandbox, dict]] = []
        for row in rows:
            remove, reason = decide(row, max_age_sec=max_age_sec, everything=everything, ids=ids, now=now)
            entry = row.to_json() | {"reason": reason}
            if remove:
                seen.update(i for i in ids if row.id.startswith(i) or row.name == i)
                doomed.append((row, entry))
            else:
                report.kept.append(entry)
        failed = {} if dry_run or not doomed else backend.remove([row.id for row, _ in doomed])
        for row, entry in doomed:
            if row.id in failed:
                report.errors.append(f"{row.name}: {failed[row.id]}")
            else:
                report.removed.append(entry)
    _snapshots([backend for backend, _ in found], ids, dry_run, report, seen)
    report.unmatched_ids = [i for i in ids if i not in seen]
    return report


def _snapshots(backends: list[Backend], ids: list[str], dry_run: bool, report: CleanupReport,
               seen: set[str]) -> None:
    """Remove (or, dry, list) every backend's stale snapshots; with ``ids`` only those named."""
    done: set[str] = set()
    for backend in backends:
        try:
            refs = [r for r in backend.stale_snapshots() if r not in done]
        except SandboxUnavailable as exc:
            log.debug("no snapshots listed for %s: %s", backend.name, exc)
            continue
        if ids:
            refs = [r for r in refs if any(_names(i, r) for i in ids)]
            seen.update(i for i in ids if any(_names(i, r) for r in refs))
        done.update(refs)
        failed = {} if dry_run or not refs else backend.remove_snapshots(refs)
        for ref in refs:
            if ref in failed:
                report.errors.append(f"snapshot {ref}: {failed[ref]}")
            else:
                report.removed.append({"id": ref, "name": ref, "kind": "snapshot", "sandbox": backend.name,
                                       "reason": "snapshot of a run that is gone, not retained"})


def reap(backend: Backend, job: str) -> list[str]:
    """Remove the sandboxes a killed earlier run of ``job`` left with ``backend`` (their owner is
    gone; not one kept with ``--keep-sandbox``, which waits for ``bench sandbox release``); returns their
    ids. A backend that cannot be looked at is logged and skipped."""
    try:
        orphans = [row.id for row in backend.leftovers(owner=job) if row.owner_alive is False and not row.kept]
    except SandboxUnavailable as exc:
        log.warning("could not look for sandboxes a killed run left on %s: %s", backend.name, exc)
        return []
    failed = backend.remove(orphans) if orphans else {}
    for sandbox_id, why in failed.items():
        log.warning("could not remove leftover sandbox %s: %s (bench sandbox cleanup retries)", sandbox_id, why)
    return [i for i in orphans if i not in failed]


def _names(ident: str, ref: str) -> bool:
    """``--id`` names a snapshot by its reference or its tag (a prefix of either)."""
    return ref.startswith(ident) or ref.split(":", 1)[-1].startswith(ident)
