"""One sandbox's life as a context: create, build, [prepare], start — and always stop.

Every caller that needs a running sandbox (a trial, a regrade, a check level,
``bench doctor --agent-start``) goes through :func:`sandbox_session`, so the
lifecycle is written once::

    async with sandbox_session(backend, spec) as session:
        await session.sandbox.exec([...])

Whatever happens — a failed build or start, an exception in the body, a
cancellation, even a second cancellation while stopping — every sandbox the
session created is stopped to the end, unless the body called :meth:`SandboxSession.keep`. A failure
before the body runs is raised as :class:`SessionSetupError` (its ``cause`` is
the original error), so callers can tell "the sandbox never came up" from
"something failed while using it".

``prepare`` may swap the built sandbox for another before it starts (the
agent's cached install layer is a sandbox of its own, built on top of the
task's image).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from .base import Sandbox, SandboxSpec


class SessionSetupError(Exception):
    """The sandbox did not come up: building, preparing or starting it failed. Not a BenchError: a wrapper
    whose ``cause`` the trial classifies (``jobs.phases.setup_failure``); its own category would hide it."""

    def __init__(self, stage: str, cause: BaseException) -> None:
        super().__init__(f"{stage}: {cause}")
        self.stage = stage
        """``build``, ``prepare`` or ``start``."""
        self.cause = cause


class SandboxSession:
    """The running sandbox of one :func:`sandbox_session`."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.kept: dict[str, Any] | None = None

    async def keep(self) -> dict[str, Any]:
        """Leave the sandbox running after the session (``--keep-sandbox``); returns what identifies it.

        Raises:
            CapabilityError: the backend cannot keep sandboxes (see ``Capabilities.keep``).
        """
        if not self.sandbox.capabilities.keep:
            from benchflow.errors import CapabilityError

            raise CapabilityError("this sandbox cannot outlive its session")
        self.kept = await self.sandbox.keep()
        return self.kept


@asynccontextmanager
async def sandbox_session(backend: Any, spec: SandboxSpec, *,
                          prepare: Callable[[Sandbox], Awaitable[Sandbox]] | None = None,
                          on_step: Callable[[str], None] = lambda _step: None) -> AsyncIterator[SandboxSession]:
    """A started sandbox for ``spec`` on ``backend``, stopped when the block ends (see module docs).

    Raises:
        SessionSetupError: build, ``prepare`` or start failed (everything created is stopped first).
    """
    created = [backend.create(spec)]
    session = SandboxSession(created[0])
    stage = "build"
    try:
        try:
            on_step("build")
            await created[0].build()
            if prepare is not None:
                stage = "prepare"
                session.sandbox = await prepare(created[0])
                if session.sandbox is not created[0]:
                    created.append(session.sandbox)
            stage = "start"
            on_step("start")
            await session.sandbox.start()
        except Exception as exc:  # noqa: BLE001 - every setup failure is reported as one
            raise SessionSetupError(stage, exc) from exc
        yield session
    finally:
        if session.kept is None:
            for sandbox in reversed(created):
                await stop_surely(sandbox)


async def stop_surely(sandbox: Sandbox) -> None:
    """``sandbox.stop()`` to the end even if the caller is cancelled again meanwhile (SIGTERM twice);
    a cancellation that arrived is re-raised once the sandbox is gone."""
    stopping = asyncio.ensure_future(sandbox.stop())
    cancelled = False
    while not stopping.done():
        try:
            await asyncio.wait([stopping])
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
