"""What BenchFlow keeps on a Docker engine, or for the ``local`` backend (``bench cache list|clean``).

A *target* is a Docker engine URL (``None``: the local engine) or
:data:`LOCAL`, whose entries come from :mod:`local_cache` (cached RUN layers
and unfinished builds under ``<cache>/local/images``).

Kinds, and how each is recognised as ours:

- ``images``: tagged images labelled ``benchflow.owned=true`` (task images,
  kept snapshots);
- ``build-cache``: untagged images with that label: the previous build of a
  tag that was rebuilt, leftovers of failed builds;
- ``pulled-images``: images a prebuilt-image task made us pull, recorded in
  ``~/.cache/benchflow/pulled-images.json`` when pulled (nothing else is ours
  to remove).

An image a container still uses stays, with the reason; nothing is removed
without ``remove=True``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchflow.util.atomic import write_json

from . import docker_engine as eng

LOCAL = "local"
KINDS = ("images", "build-cache", "pulled-images")
DEFAULT_KINDS = ("images", "build-cache")


def _pulls_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "benchflow" / "pulled-images.json"


def _read_pulls() -> dict[str, list[str]]:
    try:
        data = json.loads(_pulls_file().read_text())
    except (OSError, ValueError):
        return {}
    return data.get("engines", {}) if isinstance(data, dict) else {}


def record_pull(url: str | None, image: str) -> None:
    """Remember that we pulled ``image`` onto the engine at ``url``."""
    engines = _read_pulls()
    images = engines.setdefault(url or "docker", [])
    if image not in images:
        images.append(image)
        write_json(_pulls_file(), {"schema_version": 1, "engines": engines})


@dataclass
class CacheEntry:
    kind: str
    id: str
    ref: str
    size_bytes: int
    created: str
    engine: str
    in_use_by: list[str] = field(default_factory=list)
    """Containers (or live local sandboxes) using it; such an entry is never removed."""

    def to_json(self) -> dict:
        return asdict(self)


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def list_cache(url: str | None = None, *, kinds=DEFAULT_KINDS,
               older_than_sec: float | None = None) -> list[CacheEntry]:
    """The cache entries of ``kinds`` at target ``url``, oldest first."""
    from docker.errors import ImageNotFound

    if url == LOCAL:
        from .local_cache import list_local

        return list_local(kinds=kinds, older_than_sec=older_than_sec)
    api = eng.client(url)
    engine = url or "docker"
    users: dict[str, list[str]] = {}
    for item in api.containers(all=True):
        users.setdefault(item.get("ImageID", ""), []).append(
            f"{(item.get('Names') or ['?'])[0].lstrip('/')} ({item.get('State', '?')})")
    cutoff = time.time() - older_than_sec if older_than_sec else None
    entries: list[CacheEntry] = []

    def add(kind: str, image: dict, ref: str) -> None:
        created = float(image.get("Created", 0))
        if cutoff is not None and created > cutoff:
            return
        entries.append(CacheEntry(kind=kind, id=image["Id"], ref=ref, size_bytes=int(image.get("Size", 0)),
                                  created=_iso(created), engine=engine,
                                  in_use_by=users.get(image["Id"], [])))

    if "images" in kinds or "build-cache" in kinds:
        for image in api.images(all=False, filters={"label": f"{eng.OWNED}=true"}):
            tags = [t for t in image.get("RepoTags") or [] if t != "<none>:<none>"]
            if tags and "images" in kinds:
                add("images", image, ", ".join(tags))
            elif not tags and "build-cache" in kinds:
                add("build-cache", image, "<untagged>")
    if "pulled-images" in kinds:
        for ref in _read_pulls().get(engine, []):
            try:
                info = api.inspect_image(ref)
            except ImageNotFound:
                continue
            add("pulled-images", {"Id": info["Id"], "Size": info.get("Size", 0),
                                  "Created": _epoch(info.get("Created", ""))}, ref)
    return sorted(entries, key=lambda e: e.created)


def _epoch(text: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return 0.0


@dataclass
class CleanReport:
    entries: list[dict] = field(default_factory=list)
    """Each entry with ``action``: removed / would remove / kept, and ``reason``."""
    removed_bytes: int = 0
    errors: list[str] = field(default_factory=list)


def clean_cache(urls: list[str | None], *, kinds=DEFAULT_KINDS, older_than_sec: float | None = None,
                remove: bool = False) -> CleanReport:
    """Remove (or, without ``remove``, list what would go) the idle entries of ``kinds``."""
    report = CleanReport()
    for url in urls:
        for entry in list_cache(url, kinds=kinds, older_than_sec=older_than_sec):
            row = entry.to_json()
            if entry.in_use_by:
                report.entries.append(row | {"action": "kept",
                                             "reason": "used by " + ", ".join(entry.in_use_by)})
                continue
            if not remove:
                report.entries.append(row | {"action": "would remove", "reason": "idle"})
                continue
            try:
                _remove(url, entry)
            except Exception as exc:  # noqa: BLE001 - e.g. a child image still needs it
                report.entries.append(row | {"action": "kept", "reason": str(exc)})
                continue
            report.removed_bytes += entry.size_bytes
            report.entries.append(row | {"action": "removed", "reason": "idle"})
    return report


def _remove(url: str | None, entry: CacheEntry) -> None:
    if url == LOCAL:
        from .local_cache import remove_local

        remove_local(entry)
        return
    api = eng.client(url)
    for ref in [entry.id] if entry.ref == "<untagged>" else entry.ref.split(", "):
        api.remove_image(ref, force=False)
