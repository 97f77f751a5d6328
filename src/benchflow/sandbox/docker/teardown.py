"""How a docker sandbox (:class:`.docker.DockerSandbox`) ends: kept after the run (renamed so
cleanup leaves it), stopped (its container force-removed, and its snapshots unless retained: with
snapshots, their removal finishes in a thread the process waits for at exit) or discarded (the
force-remove sent, not waited for).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING

from ..base import to_the_end
from ..docker_engine import call
from ..engine_api import NotFound
from .container import State
from .leftovers import KEPT_PREFIX
from .snapshots import forget_snapshot, is_snapshot

if TYPE_CHECKING:
    from .sandbox import DockerSandbox

log = logging.getLogger(__name__)


class Teardown:
    """The ending half of :class:`.docker.DockerSandbox` (it keeps the state these methods use)."""

    _kept: bool
    _stop_task: asyncio.Future | None

    async def keep(self) -> dict[str, object]:
        """Keep the container after this run (``--keep-sandbox``): renamed so cleanup leaves it.

        Returns the fields of ``kept-sandbox.json`` except ``trial`` and ``created_at``;
        ``stop()`` becomes a no-op.
        """
        container = self._require_container()
        await self._settle()
        await call(self.api.rename, container, f"{KEPT_PREFIX}{container[:12]}")
        self._kept = True
        return {"schema_version": 1, "backend": self.backend, "sandbox_id": container,
                "docker_host": self.url}

    async def stop(self) -> None:
        """Force-remove the container (and snapshots unless retained: that may finish after this
        returns, before the process exits; see :meth:`_stop_blocking`). Idempotent, never raises,
        finishes even when the caller is cancelled."""
        if self._kept:
            return
        if self._stop_task is None:
            self._stop_task = asyncio.ensure_future(self._stop_all())
        try:
            await to_the_end(self._stop_task)
        except Exception:  # noqa: BLE001 - already logged in _stop_blocking
            pass

    async def discard(self) -> None:
        """:meth:`stop` for a sandbox nothing needs afterwards (a finished trial's), without waiting
        for the engine: the force-remove is sent and the removal finishes on its own, even after this
        process exits (a failure is logged; the owner labels let ``bench sandbox cleanup`` find the
        container). With more to remove (a pod, spares, snapshots, replaced containers): :meth:`stop`."""
        if self._stop_task is None and not self._kept and self._container is not None and self.pod is None \
                and not (self._spares or self._removals or (self._snapshots and not self.retain_snapshots)):
            self._stop_task = asyncio.ensure_future(call(self._discard_blocking, self._container))
        await self.stop()

    def _discard_blocking(self, container: str) -> None:
        self._state = State.STOPPED
        try:
            answer = self.api.remove_container_unawaited(container)
        except Exception:  # noqa: BLE001 - the engine did not take the request: remove and wait
            self._remove_container(container)
            return
        threading.Thread(target=_removal_answer, args=(answer, container), daemon=True).start()

    async def _stop_all(self) -> None:
        await self._settle()
        await call(self._stop_blocking)

    async def _settle(self) -> None:
        """Remove the spare and wait for the replaced containers' removals."""
        spares, self._spares = self._spares, []

        async def drop(spare: DockerSandbox, starting: asyncio.Future) -> None:
            await asyncio.gather(starting, return_exceptions=True)
            await spare.stop()

        await asyncio.gather(*(drop(spare, starting) for _, spare, starting in spares))
        await asyncio.gather(*self._removals, return_exceptions=True)

    def _stop_blocking(self) -> None:
        """Remove the container, then the snapshots (an image goes only once every container made from
        it has: before, the engine would only untag it, a dangling image cleanup cannot name). With
        snapshots, or started from one of this process's, the container's removal is sent and the
        rest done in a thread of its own (:func:`_in_order`, after the removals sent before it), not
        waited for here: the process waits for it at exit."""
        self._state = State.STOPPED
        refs = [] if self.retain_snapshots else list(self._snapshots)
        container, self._snapshots = self._container, []
        if (refs or is_snapshot(self.image)) and container is not None and self.pod is None:
            try:
                answer = self.api.remove_container_unawaited(container)
            except Exception:  # noqa: BLE001 - the engine did not take the request: remove and wait
                pass
            else:
                _in_order(lambda: _removal_answer(answer, container) and self._remove_snapshots(refs))
                return
        if container is not None:
            self._remove_container(container)
        if refs:
            _in_order(lambda: self._remove_snapshots(refs)).join()

    def _remove_snapshots(self, refs: list[str]) -> None:
        for ref in refs:
            try:
                self.api.remove_image(ref, force=True)
            except Exception as exc:  # noqa: BLE001 - cleanup finds a snapshot left tagged
                log.debug("removing snapshot %s: %s", ref, exc)
            forget_snapshot(ref)

    def _remove_container(self, container: str) -> None:
        if self.pod is not None:  # the siblings live in this container's network: they go first
            self.pod.remove()
        try:
            self.api.remove_container(container, force=True, v=True)
        except NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - stop never raises; cleanup catches leftovers
            log.warning("could not remove container %s: %s (bench sandbox cleanup removes it)",
                        container[:12], exc)


def _removal_answer(answer, container: str) -> bool:
    """Read a container removal's answer (in a thread of its own: the caller need not wait); False
    when it failed (logged; the owner labels let ``bench sandbox cleanup`` find the container)."""
    try:
        answer()
    except Exception as exc:  # noqa: BLE001 - cleanup catches leftovers
        log.warning("could not remove container %s: %s (bench sandbox cleanup removes it)", container[:12], exc)
        return False
    return True


_last: threading.Thread | None = None
_order = threading.Lock()


def _in_order(work) -> threading.Thread:
    """Run ``work`` in a thread after the previous one's ends: snapshots are removed in the order
    their sandboxes stop (a nested fork's snapshot, made on top of its parent's, and its sandbox
    go before the parent's). Not a daemon: the interpreter waits for it at exit, so a finished
    process leaves no snapshot; a killed one leaves them tagged, with their owner's labels, for
    ``bench sandbox cleanup``."""
    global _last
    with _order:
        previous = _last

        def run() -> None:
            if previous is not None:
                previous.join()
            work()

        _last = thread = threading.Thread(target=run, name="benchflow-snapshot-removal")
        thread.start()
    return thread
