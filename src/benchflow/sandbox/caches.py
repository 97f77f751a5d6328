"""``bench cache list|clean`` over every backend's :class:`~benchflow.sandbox.base.CacheStore`.

Backends that share a place (two backends on one Docker engine) share one
store, listed once. Nothing is removed without ``remove=True``, and an entry
something still uses stays, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchflow.errors import SandboxUnavailable

from .base import Backend, CacheEntry, CacheStore

DEFAULT_KINDS = ("images", "build-cache")


@dataclass
class Stores:
    stores: list[CacheStore] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Places skipped because they do not work here (e.g. no Docker engine on this machine)."""
    errors: list[str] = field(default_factory=list)
    """Places that were asked for (by ``--sandbox`` or configuration) and do not answer."""


def stores(backends: list[Backend], *, asked: bool) -> Stores:
    """The distinct cache stores of ``backends`` that answer; ``asked``: the user named these
    backends, so one that does not answer is an error rather than a note."""
    out = Stores()
    places: set[str] = set()
    for backend in backends:
        store = backend.cache
        if store is None or store.place in places:
            continue
        try:
            store.entries(kinds=())  # the cheap way to learn whether the place answers
        except SandboxUnavailable as exc:
            (out.errors if asked or backend.configured() else out.notes).append(f"skipped {backend.name}: {exc}")
            continue
        places.add(store.place)
        out.stores.append(store)
    return out


def kinds(backends: list[Backend]) -> tuple[str, ...]:
    """Every kind of entry the backends' stores have (what ``--only`` accepts)."""
    found: dict[str, None] = {}
    for backend in backends:
        if backend.cache is not None:
            found.update(dict.fromkeys(backend.cache.kinds))
    return tuple(found)


def list_cache(found: list[CacheStore], *, kinds=DEFAULT_KINDS,
               older_than_sec: float | None = None) -> list[CacheEntry]:
    """The entries of ``kinds`` in every store, each store's oldest first."""
    return [entry for store in found
            for entry in store.entries(tuple(k for k in kinds if k in store.kinds), older_than_sec)]


@dataclass
class CleanReport:
    entries: list[dict] = field(default_factory=list)
    """Each entry with ``action``: removed / would remove / kept, and ``reason``."""
    removed_bytes: int = 0
    errors: list[str] = field(default_factory=list)


def clean_cache(found: list[CacheStore], *, kinds=DEFAULT_KINDS, older_than_sec: float | None = None,
                remove: bool = False) -> CleanReport:
    """Remove (or, without ``remove``, list what would go) the idle entries of ``kinds``."""
    report = CleanReport()
    for store in found:
        for entry in store.entries(tuple(k for k in kinds if k in store.kinds), older_than_sec):
            row = entry.to_json()
            if entry.in_use_by:
                report.entries.append(row | {"action": "kept", "reason": "used by " + ", ".join(entry.in_use_by)})
                continue
            if not remove:
                report.entries.append(row | {"action": "would remove", "reason": "idle"})
                continue
            try:
                store.remove(entry)
            except Exception as exc:  # noqa: BLE001 - e.g. a child image still needs it
                report.entries.append(row | {"action": "kept", "reason": str(exc)})
                continue
            report.removed_bytes += entry.size_bytes
            report.entries.append(row | {"action": "removed", "reason": "idle"})
    return report
