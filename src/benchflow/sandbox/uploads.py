"""Several uploads into one sandbox in as few round trips as its backend allows.

A sandbox whose backend can take several files in one call has ``put_many(items)`` (the Docker
sandbox sends one archive; every upload costs the engine a mount of the container's file system);
any other sandbox gets one :meth:`~benchflow.sandbox.base.Sandbox.put` per item, in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .optional import PutsMany


async def put_all(sandbox: Any, items: Sequence[tuple[Path, str]]) -> None:
    """``sandbox.put(local, remote)`` for every pair, batched when the sandbox can."""
    if not items:
        return
    if isinstance(sandbox, PutsMany) and len(items) > 1:
        await sandbox.put_many(list(items))
        return
    for local, remote in items:
        await sandbox.put(local, remote)
