"""What the ``local`` backend keeps on disk (``bench cache list|clean`` with the ``local`` target).

Under ``<cache>/local/images`` (:func:`.local.layer.images_dir`):

- ``<key>/`` with ``image.json``, ``build.log`` and ``layer/``: a built RUN
  layer, kind ``images``; a live local sandbox whose ``owner.json`` names the
  key is using it, and such an image stays;
- ``<key>.tmp-<suffix>/``: an unfinished build (its builder was killed), kind
  ``build-cache``; it stays while someone holds the key's build lock;
- ``<key>.lock``: the build lock itself, never listed (an empty file, and
  removing it under a waiting builder would break the lock).

An image is taken out of the way with a rename before its folder is deleted,
so a sandbox starting meanwhile either finds the whole image or rebuilds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import time
from pathlib import Path

from ..base import CacheEntry
from . import state as local_state

ENGINE = "local"
_TMP = ".tmp-"


def _size(path: Path) -> int:
    """Bytes of the files under ``path`` (a hard-linked file counted once); never follows links."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                info = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (info.st_dev, info.st_ino) not in seen and not stat.S_ISDIR(info.st_mode):
                seen.add((info.st_dev, info.st_ino))
                total += info.st_size
    return total


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _users() -> dict[str, list[str]]:
    """Image key -> the live local sandboxes using it (``<id> (live pid N)``)."""
    users: dict[str, list[str]] = {}
    for box in local_state.list_sandboxes():
        if box.get("alive") and box.get("image"):
            users.setdefault(str(box["image"]), []).append(f"{box.get('id')} (live pid {box.get('pid')})")
    return users


def _build_running(images: Path, key: str) -> bool:
    """Whether a builder holds ``<key>.lock`` right now (probed with a non-blocking lock)."""
    lock = images / f"{key}.lock"
    if not lock.exists():
        return False
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def list_local(cache_root: Path | None = None, *, kinds=("images", "build-cache"),
               older_than_sec: float | None = None) -> list[CacheEntry]:
    """The local images and unfinished builds of ``kinds`` under ``cache_root``, oldest first."""
    from .layer import images_dir

    images = images_dir(cache_root or local_state.cache_root())
    if not images.is_dir():
        return []
    users = _users()
    cutoff = time.time() - older_than_sec if older_than_sec else None
    entries = []
    for folder in sorted(p for p in images.iterdir() if p.is_dir() and not p.is_symlink()):
        key, _, suffix = folder.name.partition(_TMP)
        manifest = folder / "image.json"
        if not suffix and manifest.is_file() and "images" in kinds:
            try:
                base = json.loads(manifest.read_text()).get("base") or "?"
            except (OSError, ValueError):
                base = "?"
            kind, ref, created = "images", f"{base} (local layer)", manifest.stat().st_mtime
            in_use = users.get(key, [])
        elif suffix and "build-cache" in kinds:
            kind, ref, created = "build-cache", "<unfinished local build>", folder.stat().st_mtime
            in_use = ["a build in progress"] if _build_running(images, key) else []
        else:
            continue
        if cutoff is not None and created > cutoff:
            continue
        entries.append(CacheEntry(kind=kind, id=folder.name, ref=ref, size_bytes=_size(folder),
                                  created=_iso(created), engine=ENGINE, in_use_by=in_use))
    return sorted(entries, key=lambda e: e.created)


def remove_local(entry: CacheEntry, cache_root: Path | None = None) -> None:
    """Delete one entry of :func:`list_local`, checking again that nothing took it up since.

    Raises:
        RuntimeError: a live sandbox or a builder uses it now (the message says which).
    """
    from .layer import images_dir

    images = images_dir(cache_root or local_state.cache_root())
    folder = images / entry.id
    if "/" in entry.id or not folder.is_dir():
        return
    key = entry.id.partition(_TMP)[0]
    if entry.kind == "images":
        if users := _users().get(key):
            raise RuntimeError("used by " + ", ".join(users))
        doomed = images / f"{key}{_TMP}removing-{os.getpid()}"
        os.rename(folder, doomed)
        folder = doomed
    elif _build_running(images, key):
        raise RuntimeError("a build is in progress")
    shutil.rmtree(folder)


class LocalCache:
    """The local backend's cache as a ``CacheStore`` (``bench cache``)."""

    place = ENGINE
    kinds = ("images", "build-cache")

    def entries(self, kinds: tuple[str, ...] = kinds, older_than_sec: float | None = None) -> list[CacheEntry]:
        return list_local(kinds=kinds, older_than_sec=older_than_sec)

    def remove(self, entry: CacheEntry) -> None:
        remove_local(entry)
