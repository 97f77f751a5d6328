"""What BenchFlow keeps on a Docker engine (the ``cache`` of the Docker backends, ``bench cache``).

Kinds, and how each is recognised as ours:

- ``images``: tagged images labelled ``benchflow.owned=true`` (task images,
  kept snapshots);
- ``build-cache``: untagged images with that label: the previous build of a
  tag that was rebuilt, leftovers of failed builds;
- ``pulled-images``: images a prebuilt-image task made us pull, recorded in
  ``~/.cache/benchflow/pulled-images.json`` when pulled (nothing else is ours
  to remove).

An image a container still uses stays, with the reason. Two backends on one
engine share its images, so the store's ``place`` is the engine.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import SandboxUnavailable
from benchflow.util.atomic import write_json

from .. import docker_engine as eng
from ..base import CacheEntry

KINDS = ("images", "build-cache", "pulled-images")


def _pulls_file() -> Path:
    from benchflow.util.cache_dir import cache_root

    return cache_root() / "pulled-images.json"


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


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class DockerCache:
    """The images BenchFlow keeps on the engine at ``url`` (None: the local engine)."""

    url: str | None
    kinds: tuple[str, ...] = KINDS

    @property
    def place(self) -> str:
        return self.url or "docker"

    def entries(self, kinds: tuple[str, ...] = KINDS, older_than_sec: float | None = None) -> list[CacheEntry]:
        """The cache entries of ``kinds`` on this engine, oldest first.

        Raises:
            SandboxUnavailable: the engine does not answer.
        """
        from ..engine_api import ImageNotFound

        answers, why = eng.ping(self.url)
        if not answers:
            raise SandboxUnavailable(why)
        if not kinds:
            return []
        api = eng.client(self.url)
        users: dict[str, list[str]] = {}
        for item in api.containers(all=True):
            users.setdefault(item.get("ImageID", ""), []).append(
                f"{(item.get('Names') or ['?'])[0].lstrip('/')} ({item.get('State', '?')})")
        cutoff = time.time() - older_than_sec if older_than_sec else None
        found: list[CacheEntry] = []

        def add(kind: str, image: dict, ref: str) -> None:
            created = float(image.get("Created", 0))
            if cutoff is not None and created > cutoff:
                return
            found.append(CacheEntry(kind=kind, id=image["Id"], ref=ref, size_bytes=int(image.get("Size", 0)),
                                    created=_iso(created), engine=self.place,
                                    in_use_by=users.get(image["Id"], [])))

        if "images" in kinds or "build-cache" in kinds:
            for image in api.images(all=False, filters={"label": f"{eng.OWNED}=true"}):
                tags = [t for t in image.get("RepoTags") or [] if t != "<none>:<none>"]
                if tags and "images" in kinds:
                    add("images", image, ", ".join(tags))
                elif not tags and "build-cache" in kinds:
                    add("build-cache", image, "<untagged>")
        if "pulled-images" in kinds:
            for ref in _read_pulls().get(self.place, []):
                try:
                    info = api.inspect_image(ref)
                except ImageNotFound:
                    continue
                add("pulled-images", {"Id": info["Id"], "Size": info.get("Size", 0),
                                      "Created": _epoch(info.get("Created", ""))}, ref)
        return sorted(found, key=lambda e: e.created)

    def remove(self, entry: CacheEntry) -> None:
        """Remove an image (every tag of it); the engine refuses one a container or child image needs."""
        api = eng.client(self.url)
        for ref in [entry.id] if entry.ref == "<untagged>" else entry.ref.split(", "):
            api.remove_image(ref, force=False)


def _epoch(text: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return 0.0
