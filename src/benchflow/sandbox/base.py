"""The Sandbox contract every backend implements.

A sandbox is one isolated machine for one trial. Its life is::

    sandbox = backend.create(spec)      # no side effects yet
    await sandbox.build()               # idempotent; cached by spec.cache_key
    await sandbox.start()
    await sandbox.exec([...]) / exec_stream([...]) / put(...) / get(...)
    await sandbox.stop()                # idempotent, shielded from cancellation

Commands are argv lists; a shell is used only when the caller asks for one
(``["sh", "-c", script]``). Helpers that several callers need (tar streams,
workspace freezing) are free functions taking a ``Sandbox``, not methods.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from .copyout import CopyReport

NetworkMode = Literal["no-network", "public", "allowlist"]

DEFAULT_OUTPUT_CAP_BYTES = 1 << 20  # 1 MiB kept of each stream; the rest is cut with a note


class Capabilities(BaseModel):
    """What a backend can do, as data, so a plan can refuse a task before anything starts."""

    model_config = ConfigDict(frozen=True)

    network_modes: frozenset[str] = frozenset({"no-network", "public"})
    """Network modes it enforces (``no-network``, ``public``, ``allowlist``)."""
    network_fallbacks: Mapping[str, str] = {}
    """Modes it accepts but runs stricter, requested -> delivered (e.g. ``public`` ->
    ``no-network`` on a Docker engine without a bridge network). A plan may run such a
    task with a warning instead of refusing it."""
    snapshots: bool = False
    """Whether ``snapshot()``/``restore()`` work."""
    gpus: bool = False
    """Whether it can give a task GPUs."""
    multi_service: bool = False
    """Whether it runs docker-compose multi-service environments."""
    build_from_dockerfile: bool = True
    """Whether it builds environment/Dockerfile (the local backend honours a subset)."""
    resource_limits: bool = True
    """Whether cpus/memory_mb limits are enforced."""

    def network_for(self, mode: str) -> str | None:
        """The network mode a task asking for ``mode`` gets here; None when it is refused."""
        if mode in self.network_modes:
            return mode
        return self.network_fallbacks.get(mode)


@dataclass(frozen=True)
class SandboxSpec:
    """Everything a backend needs to build and start one sandbox for one trial."""

    name: str
    """Sanitised name for the task (image name base, container name prefix)."""
    environment_dir: Path | None
    """Build context: the task's ``environment/`` folder (None with a prebuilt image)."""
    cache_key: str
    """Content digest the image tag is derived from (a changed task rebuilds)."""
    dockerfile: str = "Dockerfile"
    image: str | None = None
    """Prebuilt image to use instead of building (task ``sandbox.docker_image``)."""
    cpus: float = 1.0
    memory_mb: int = 2048
    network_mode: NetworkMode = "public"
    build_timeout_sec: float = 600.0
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    """Task ``sandbox.workdir``; else the image WORKDIR; ``/`` becomes ``/root``."""
    base_image_override: str | None = None
    sandbox_user: str | None = "agent"
    """Non-root user created at start for the agent (None: the agent runs as root)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Ownership labels (job, trial, owning pid) written on every resource created."""
    build_network: Literal["none", "host"] = "host"
    ca_bundle: Path | None = None
    """Host CA bundle to trust inside builds and the sandbox (TLS-intercepting proxies)."""
    mounts: Mapping[str, Path] = field(default_factory=dict)
    """Host folders bind-mounted read-write into the sandbox, sandbox path -> host path (the model
    bridge's socket folder). Backends that cannot mount host folders refuse a spec that has any."""


@dataclass(frozen=True)
class ExecResult:
    """What one ``exec`` returned."""

    return_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    truncated: bool = False
    """True when stdout or stderr was cut at the output cap (a note is appended)."""

    @property
    def success(self) -> bool:
        return self.return_code == 0 and not self.timed_out


class Process(Protocol):
    """A long-lived process inside the sandbox with open stdio (for ACP agents)."""

    stdin: "AsyncWriter"
    stdout: "AsyncReader"
    stderr: "AsyncReader"

    async def wait(self) -> int: ...
    async def kill(self) -> None: ...


class AsyncWriter(Protocol):
    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...
    def close(self) -> None: ...


class AsyncReader(Protocol):
    async def readline(self) -> bytes: ...
    async def read(self, n: int = -1) -> bytes: ...
    def __aiter__(self) -> AsyncIterator[bytes]: ...


@runtime_checkable
class Sandbox(Protocol):
    """One isolated machine for one trial."""

    spec: SandboxSpec
    capabilities: Capabilities

    @property
    def sandbox_id(self) -> str | None:
        """Backend id (container id, namespace pid) once started; None before."""

    @property
    def workdir(self) -> str:
        """The workspace path inside the sandbox (valid after ``start``)."""

    async def build(self) -> None:
        """Build (or find cached) the image for ``spec``.

        Raises:
            BuildError: the build failed; ``log_tail`` holds the end of the log.
            SandboxUnavailable: the backend cannot run here.
            CapabilityError: the spec asks for something the backend cannot do.
        """

    async def start(self) -> None:
        """Start the sandbox (builds first if needed).

        Raises:
            SandboxError: it did not start.
        """

    async def exec(
        self,
        cmd: list[str],
        *,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP_BYTES,
    ) -> ExecResult:
        """Run ``cmd`` to completion. ``user`` None is root.

        A timeout kills the whole process tree the command started and returns
        ``timed_out=True`` with return code 124 (it does not raise).

        Raises:
            InfraError: the sandbox is gone or the transport broke.
        """

    async def exec_stream(
        self,
        cmd: list[str],
        *,
        user: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> Process:
        """Start ``cmd`` with open stdin/stdout/stderr and return at once."""

    async def put(self, local: Path, remote: str) -> None:
        """Copy a local file or folder to ``remote`` (modes and symlinks kept)."""

    async def get(self, remote: str, local: Path) -> CopyReport:
        """Copy ``remote`` (file or folder) to the local path ``local`` through :mod:`.copyout`.

        What the sandbox wrote is untrusted: links that lead out, devices, FIFOs
        and sockets are dropped, modes are reset, and sizes are capped; the
        report says what was left out (``report.note()`` for a result file).
        """

    async def snapshot(self) -> str:
        """Save the filesystem; returns a reference for ``restore``.

        Raises:
            CapabilityError: the backend has no snapshots (see capabilities).
        """

    async def restore(self, ref: str) -> None:
        """Restart from a snapshot reference."""

    async def stop(self) -> None:
        """Remove everything this sandbox created. Safe to call twice, never raises."""
