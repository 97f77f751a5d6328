"""What the sandboxes of one container on someone else's machine share (Daytona, Modal,
AgentCore, Apple's container VM): the id and workdir properties, the refusals of what
such a sandbox cannot do (host mounts, compose services, a network mode it does not
enforce), and a ``stop`` that runs once, never raises and finishes under cancellation.

A subclass names itself (:attr:`KIND`, :attr:`DOC`), says why host folders cannot reach it
(:attr:`NO_MOUNTS`), and implements ``_stop_all``; ``_check_network`` and ``_network_reason``
may say more about networks.
"""

from __future__ import annotations

import asyncio

from benchflow.errors import CapabilityError

from .base import to_the_end
from .docker_setup import resolve_workdir


class OneContainerSandbox:
    KIND = ""
    """How messages name it: "the Daytona sandbox"."""
    DOC = ""
    """Its page under docs/."""
    NO_MOUNTS = ""
    """Why no host folder can be mounted into it."""

    spec: object
    capabilities: object
    _id: str | None = None
    _workdir: str | None = None
    _stop_task: asyncio.Future | None = None

    @property
    def sandbox_id(self) -> str | None:
        return self._id

    @property
    def workdir(self) -> str:
        return self._workdir or resolve_workdir(self.spec.workdir, None)

    def _refuse_what_it_cannot_do(self) -> None:
        name = self.spec.name
        if self.spec.mounts:
            raise CapabilityError(f"{name}: {self.KIND} cannot mount this machine's folders ({self.NO_MOUNTS})")
        if self.spec.compose_file is not None:
            raise CapabilityError(f"{name}: {self.KIND} runs one container, not a docker-compose environment")
        self._check_network()

    def _check_network(self) -> None:
        if self.capabilities.network_for(self.spec.network_mode) is None:
            raise CapabilityError(f"{self.spec.name}: network mode {self.spec.network_mode!r} is not enforced "
                                  f"by {self.KIND}{self._network_reason()} (see {self.DOC})")

    def _network_reason(self) -> str:
        return ""

    async def stop(self) -> None:
        """Remove the sandbox. Idempotent, never raises, finishes under cancellation."""
        if self._stop_task is None:
            self._stop_task = asyncio.ensure_future(self._stop_all())
        await to_the_end(self._stop_task)

    async def _stop_all(self) -> None:
        raise NotImplementedError
