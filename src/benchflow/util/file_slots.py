"""A counting semaphore shared by processes: N slot files in one private folder, each held with ``flock``.

Worker shards (``--worker-concurrency``) are separate processes, so an
``asyncio.Semaphore`` cannot bound what they do together; ``--build-concurrency``
takes one of these slots around each image build. A slot is released when its
holder closes the file, exits or is killed, so a crashed worker never keeps one.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

POLL_SEC = 0.1


def make_slots(folder: Path, n: int) -> Path:
    """Create ``folder`` (0700) with ``n`` slot files; returns it."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"slot-{i}").touch(mode=0o600)
    return folder


def try_take(folder: Path) -> int | None:
    """The fd of a free slot now held by this caller, or None when every slot is held."""
    for slot in sorted(folder.glob("slot-*")):
        fd = os.open(slot, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return fd
    return None


@contextlib.asynccontextmanager
async def held_slot(folder: str | os.PathLike[str] | None) -> AsyncIterator[None]:
    """Hold one slot of ``folder`` while the block runs (no folder: no limit)."""
    if not folder:
        yield
        return
    fd = try_take(Path(folder))
    while fd is None:
        await asyncio.sleep(POLL_SEC)
        fd = try_take(Path(folder))
    try:
        yield
    finally:
        os.close(fd)
