"""Snapshots of a docker sandbox (:class:`.docker.DockerSandbox`) and restores from them.

A snapshot is a ``docker commit`` of the container, labelled with the owner (``bench cache`` lists
it); the sandbox removes it when it stops unless it is retained. A restore replaces the container
with one started from the snapshot; a branch's sequential children take spare containers started
ahead (:meth:`Snapshots.prepare_restore`), so that their restores only swap containers.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING

from ..docker_engine import call
from .container import State, slug
from .leftovers import RETAINED

if TYPE_CHECKING:
    from .sandbox import DockerSandbox

log = logging.getLogger(__name__)

SNAPSHOT_REPO = "benchflow/snapshot"
SPARES_AHEAD = 2
"""Containers a sandbox starts ahead from one snapshot at most (:meth:`Snapshots.prepare_restore`)."""


_workdirs: dict[str, str | None] = {}
"""The working directory in each snapshot this process made (its container's): a sandbox started
from one need not ask the engine for it (:func:`image_workdir`)."""


def image_workdir(api, image: str) -> str | None:
    """The image's working directory: known for this process's snapshots, else the engine's answer."""
    if image in _workdirs:
        return _workdirs[image]
    return (api.inspect_image(image).get("Config") or {}).get("WorkingDir")


def is_snapshot(image: str | None) -> bool:
    """Whether ``image`` is a snapshot this process made and has not removed."""
    return image in _workdirs


def forget_snapshot(ref: str) -> None:
    """The snapshot ``ref`` is removed: its working directory is no longer kept."""
    _workdirs.pop(ref, None)


class Snapshots:
    """The snapshot half of :class:`.docker.DockerSandbox` (it keeps the state these methods use)."""

    _snapshots: list[str]
    _spares: list[tuple[str, DockerSandbox, asyncio.Future]]
    _removals: list[asyncio.Future]

    async def snapshot(self, *, retain: bool = False) -> str:
        """``docker commit`` of the container, labelled with the owner (``bench cache`` lists it);
        removed by ``stop()`` unless ``retain`` (then labelled ``benchflow.retained``)."""
        container = self._require_container()
        tag = f"{slug(self.spec.name)}-{secrets.token_hex(6)}"
        labels = self._labels(kind="snapshot") | ({RETAINED: "true"} if retain else {})
        await call(self.api.commit, container, repository=SNAPSHOT_REPO, tag=tag,
                   conf={"Labels": labels})
        ref = f"{SNAPSHOT_REPO}:{tag}"
        _workdirs[ref] = self._workdir
        if not retain:
            self._snapshots.append(ref)
        return ref

    async def restore(self, ref: str) -> None:
        """Replace the container with one started from snapshot ``ref``: the spare
        :meth:`prepare_restore` started ahead when it is of ``ref``, else a new one. The replaced
        container is removed in the background (``stop()`` waits for it; its owner labels let
        cleanup find it after a crash). A sandbox built but not started yet starts from ``ref``."""
        if self._state is State.NEW:
            self.image = ref
            await self.start()
            return
        old = self._require_container()
        if self.pod is not None:  # the pod's siblings join the new container's network: remove first
            await call(self._remove_container, old)
        else:
            self._removals.append(asyncio.ensure_future(call(self._remove_container, old)))
        self._container, self._state = None, State.NEW
        if await self._adopt_spare(ref):
            return
        self.image = ref
        await self.start()

    async def prepare_restore(self, ref: str, count: int = 1) -> None:
        """Have ``count`` (at most :data:`SPARES_AHEAD`) spare containers started from snapshot ``ref``
        in the background, so that the next restores of ``ref`` only swap containers (a branch's
        sequential children). No-op with a pod of services."""
        if self.pod is not None or self._state is not State.STARTED:
            return
        have = sum(1 for r, _, _ in self._spares if r == ref)
        for _ in range(min(count, SPARES_AHEAD) - have):
            spare = type(self)(self.spec, url=self.url, capabilities=self.capabilities, backend=self.backend,
                                  detached=self.detached, runtime=self.runtime)
            spare.image = ref
            self._spares.append((ref, spare, asyncio.ensure_future(spare.start())))

    async def _adopt_spare(self, ref: str) -> bool:
        """Make the oldest spare of ``ref`` this sandbox's container; False when there is none (or it failed)."""
        mine = next((entry for entry in self._spares if entry[0] == ref), None)
        if mine is None:
            return False
        self._spares.remove(mine)
        _, spare, starting = mine
        try:
            await asyncio.shield(starting)
        except Exception as exc:  # noqa: BLE001 - the caller starts a new container instead
            log.debug("%s: the spare container did not start: %s", self.spec.name, exc)
            await spare.stop()
            return False
        self._container, self._workdir, self._state = spare._container, spare._workdir, State.STARTED
        self.network_note = spare.network_note
        return True

