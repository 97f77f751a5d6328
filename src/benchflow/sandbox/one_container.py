"""What the sandboxes of one container on someone else's machine share (Daytona, Modal,
AgentCore, Apple's container VM): the id and workdir properties, the refusals of what
such a sandbox cannot do (host mounts, compose services, a network mode it does not
enforce), a ``start`` that builds, creates and sets up the sandbox and deletes it again
when any of that fails or is cancelled, the setup (the docker backend's script, in the
spec's workdir or the image's), and a ``stop`` that runs once, never raises and finishes
under cancellation.

A subclass is made with the owner labels to write on the sandbox, names itself
(:attr:`KIND`, :attr:`DOC`), says why host folders cannot reach it (:attr:`NO_MOUNTS`),
and implements ``build``, ``exec``, ``_started``, ``_create``, ``_image_workdir`` and
``_stop_all``; ``_check_network`` and ``_network_reason`` may say more about networks.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from benchflow.errors import CapabilityError, InfraError, SandboxError

from .base import to_the_end
from .docker_setup import SETUP, resolve_workdir


class OneContainerSandbox(abc.ABC):
    KIND = ""
    """How messages name it: "the Daytona sandbox"."""
    DOC = ""
    """Its page under docs/."""
    NO_MOUNTS = ""
    """Why no host folder can be mounted into it."""

    def __init__(self, spec, *, capabilities, labels) -> None:
        self.spec = spec
        self.capabilities = capabilities
        self.labels = dict(labels)
        """The owner labels written on the sandbox (as tags where the provider calls them so)."""
        self._id: str | None = None
        self._workdir: str | None = None
        self._stopped = False
        self._stop_task: asyncio.Future | None = None

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

    async def start(self) -> None:
        """Build, create and set up the sandbox; a failure or cancel deletes what was made (``stop``)."""
        if self._started():
            return
        self._refuse_if_stopped()
        await self._bring_up(self.build, self._create, self._setup)

    def _refuse_if_stopped(self) -> None:
        if self._stopped:
            raise SandboxError(f"{self.spec.name}: this sandbox was stopped; create a new one")

    async def _bring_up(self, *steps: Callable[[], Awaitable[None]]) -> None:
        """Run ``steps`` in order; when one fails or is cancelled, ``stop`` deletes the sandbox first."""
        try:
            for step in steps:
                await step()
        except BaseException:
            await self.stop()
            raise

    async def _setup(self) -> None:
        """Run the docker backend's setup script (agent user, ``/logs``) in the workdir: the spec's,
        else the image's ``WORKDIR``."""
        image_wd = await self._image_workdir() if self.spec.workdir is None else None
        self._workdir = resolve_workdir(self.spec.workdir, image_wd)
        done = await self.exec(["sh", "-c", SETUP, "sh", self.spec.sandbox_user or "", self._workdir], cwd="/",
                               timeout=self.spec.setup_timeout_sec)
        if done.timed_out:
            raise SandboxError(f"{self.spec.name}: sandbox setup did not finish within "
                               f"{self.spec.setup_timeout_sec:g}s (--sandbox-setup-timeout)")
        if not done.success:
            raise SandboxError(f"{self.spec.name}: sandbox setup failed (rc={done.return_code}): "
                               f"{(done.stdout + done.stderr).strip()[-500:]}")

    def _not_running(self) -> InfraError:
        """What a command raises before ``start`` or after ``stop``."""
        return InfraError(f"{self.spec.name}: the sandbox is not running (start it first)")

    @staticmethod
    def _put_source(local: Path | str) -> Path:
        """``put``'s ``local`` as a path; it must be there (a dangling link is)."""
        local = Path(local)
        if not local.exists() and not local.is_symlink():
            raise FileNotFoundError(f"put: {local} does not exist")
        return local

    @abc.abstractmethod
    def _started(self) -> bool:
        """True once the sandbox was created (and not replaced since)."""

    @abc.abstractmethod
    async def _create(self) -> None:
        """Create the sandbox (the id known before anything else can fail) and wait until it runs."""

    @abc.abstractmethod
    async def _image_workdir(self) -> str | None:
        """The image's ``WORKDIR``, where a command starts (None or empty: unknown)."""

    async def stop(self) -> None:
        """Remove the sandbox. Idempotent, never raises, finishes under cancellation."""
        if self._stop_task is None:
            self._stop_task = asyncio.ensure_future(self._stop_all())
        await to_the_end(self._stop_task)

    @abc.abstractmethod
    async def _stop_all(self) -> None:
        """Delete the sandbox and what it made (``stop`` runs it once)."""
