"""Several copy-outs of one sandbox in as few round trips as its backend allows.

The counterpart of :mod:`.uploads`: a sandbox that can copy several folders in one call has
``get_many(items)`` (the Docker sandbox reads one archive of their parent folder, since every
archive read costs the engine a mount of the container's file system); any other sandbox gets one
:meth:`~benchflow.sandbox.base.Sandbox.get` per item, in order.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError

from .optional import GetsMany


async def get_all(sandbox: Any, items: Sequence[tuple[str, Path]]) -> list[Any]:
    """``sandbox.get(remote, local)`` for every pair, batched when the sandbox can: each pair's
    :class:`~.copyout.CopyReport`, or the ``FileNotFoundError`` / :class:`BenchError` its copy raised."""
    if isinstance(sandbox, GetsMany) and len(items) > 1:
        return await sandbox.get_many(list(items))
    return await one_by_one(sandbox, items)


async def one_by_one(sandbox: Any, items: Sequence[tuple[str, Path]]) -> list[Any]:
    out: list[Any] = []
    for remote, local in items:
        try:
            out.append(await sandbox.get(remote, local))
        except (FileNotFoundError, BenchError) as exc:
            out.append(exc)
    return out


def siblings(remotes: Sequence[str]) -> tuple[str, list[str]] | None:
    """(the folder that directly holds every one of ``remotes``, their names), or None when they are
    not such siblings (another parent, a repeated name, a relative path, the root as the parent)."""
    clean = [posixpath.normpath(r) for r in remotes]
    parents = {posixpath.dirname(r) for r in clean}
    names = [posixpath.basename(r) for r in clean]
    if len(parents) != 1 or len(set(names)) != len(names) or not all(r.startswith("/") for r in clean):
        return None
    parent = parents.pop()
    if parent == "/" or any(n in ("", ".", "..") for n in names):
        return None
    return parent, names
