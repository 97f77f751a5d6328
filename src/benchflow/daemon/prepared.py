"""Prepared sandboxes (``bench daemon start --prepare N``): the next identical call skips create and start.

After a one-task run ends, the daemon builds and starts a sandbox from the
spec that run's trial used and keeps it for ``--prepare-ttl`` seconds. A later
trial whose sandbox spec is the same in everything but its ownership labels
(task, image digest, resources, network, env, mounts, user, …) takes it
instead of creating one; the trial then owns it as any other (its session
stops it). A spec with per-trial parts (a model bridge mount) never matches,
so only calls that would get the same sandbox anyway are served from the pool.

A prepared sandbox keeps the labels of the run it was prepared after and is
owned by the daemon's pid: ``bench daemon stop`` removes the unused ones, and
after a ``kill -9`` of the daemon ``bench sandbox cleanup`` finds them (owner gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from pathlib import Path
from typing import Any

from benchflow.sandbox.session import stop_surely

log = logging.getLogger(__name__)


def spec_key(spec: Any) -> str:
    """What must be equal for a prepared sandbox to serve ``spec``: every field but the labels."""
    def plain(value: Any) -> Any:
        if isinstance(value, dict) or hasattr(value, "items"):
            return tuple(sorted((str(k), plain(v)) for k, v in value.items()))
        if isinstance(value, Path):
            return str(value)
        return value

    return repr(tuple((f.name, plain(getattr(spec, f.name))) for f in dataclasses.fields(spec) if f.name != "labels"))


class Pool:
    """The prepared sandboxes of one daemon, by spec key."""

    def __init__(self, size: int, ttl_sec: float) -> None:
        self.size, self.ttl_sec = size, ttl_sec
        self.ready: dict[str, list[Any]] = {}
        self.preparing: set[asyncio.Task] = set()
        self.last: tuple[Any, Any] | None = None
        """(backend, spec) of the last sandbox a run asked for."""

    @property
    def count(self) -> int:
        return sum(map(len, self.ready.values()))

    def wrap(self, backend: Any) -> Any:
        return _Preparing(backend, self)

    def take(self, spec: Any) -> Any | None:
        waiting = self.ready.get(spec_key(spec))
        return waiting.pop(0) if waiting else None

    def after_run(self, units: int) -> None:
        """Prepare the next identical call's sandbox after a one-task run (while the pool has room)."""
        last, self.last = self.last, None
        if self.size and units == 1 and last is not None and self.count + len(self.preparing) < self.size:
            task = asyncio.create_task(self._prepare(*last))
            self.preparing.add(task)
            task.add_done_callback(self.preparing.discard)

    async def _prepare(self, backend: Any, spec: Any) -> None:
        sandbox = backend.create(spec)
        try:
            await sandbox.build()
            await sandbox.start()
        except BaseException as exc:
            await stop_surely(sandbox)
            if isinstance(exc, Exception):
                log.warning("could not prepare a sandbox for %s: %s", spec.name, exc)
                return
            raise
        key = spec_key(spec)
        self.ready.setdefault(key, []).append(sandbox)
        asyncio.get_running_loop().call_later(self.ttl_sec, self._expire, key, sandbox)

    def _expire(self, key: str, sandbox: Any) -> None:
        waiting = self.ready.get(key, [])
        if sandbox in waiting:
            waiting.remove(sandbox)
            task = asyncio.create_task(stop_surely(sandbox))
            self.preparing.add(task)
            task.add_done_callback(self.preparing.discard)

    async def close(self) -> None:
        """Stop preparing, and remove every sandbox nobody took."""
        for task in list(self.preparing):
            task.cancel()
        await asyncio.gather(*self.preparing, return_exceptions=True)
        for waiting in self.ready.values():
            for sandbox in waiting:
                with contextlib.suppress(Exception):
                    await stop_surely(sandbox)
        self.ready.clear()


class _Preparing:
    """A backend whose ``create`` hands out a prepared sandbox when one fits; the rest is the backend's."""

    def __init__(self, inner: Any, pool: Pool) -> None:
        self._inner, self._pool = inner, pool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, spec: Any) -> Any:
        self._pool.last = (self._inner, spec)
        return self._pool.take(spec) or self._inner.create(spec)
