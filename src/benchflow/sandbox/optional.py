"""What a sandbox may do beyond the :class:`~benchflow.sandbox.base.Sandbox` protocol, declared.

Each is a runtime-checkable protocol of one member; a caller asks ``isinstance(sandbox, PutsMany)``
instead of probing for a name, and the conformance suite and the type checker see what a backend
offers. A backend without one gets the plain path (one copy at a time, ``stop()``, no room, no
block by construction, no spare sandbox)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .base import MetadataBlock


@runtime_checkable
class PutsMany(Protocol):
    async def put_many(self, items: list[tuple[Path, str]]) -> None:
        """Upload every (local, remote) pair in one step."""


@runtime_checkable
class GetsMany(Protocol):
    async def get_many(self, items: list[tuple[str, Path]]) -> list[Any]:
        """Copy every (remote, local) pair out in one step: each pair's ``CopyReport`` or its error."""


@runtime_checkable
class Discards(Protocol):
    async def discard(self) -> None:
        """End the sandbox with a removal that may finish after this returns (nothing needs it)."""


@runtime_checkable
class MakesRoom(Protocol):
    def room_to_start(self) -> contextlib.AbstractAsyncContextManager:
        """A block in which a root exec can start although the agent filled the process table."""


@runtime_checkable
class BlocksMetadata(Protocol):
    async def enforce_metadata_block(self) -> MetadataBlock:
        """Block the cloud metadata endpoints by construction, or say why it cannot here."""


@runtime_checkable
class HasServices(Protocol):
    def service(self, name: str) -> Any:
        """The sandbox of one service of a multi-service task."""


@runtime_checkable
class PreparesRestore(Protocol):
    async def prepare_restore(self, ref: str, count: int = 1) -> None:
        """Start the next ``count`` restores' sandboxes from ``ref`` ahead of time."""
