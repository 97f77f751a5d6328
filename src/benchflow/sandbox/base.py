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

A :class:`Backend` is the kind of sandbox: its :class:`Capabilities` as data,
whether it works here, and what it left behind (:meth:`Backend.leftovers`,
:meth:`Backend.remove`, :meth:`Backend.exists`) and keeps (:attr:`Backend.cache`).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .inventory import CacheEntry, CacheStore, OwnedSandbox
from .request import Capabilities, NetworkMode, SandboxSpec
from .optional import BlocksMetadata, Discards, MakesRoom

__all__ = ["REMEDY", "AsyncReader", "AsyncWriter", "Backend", "CacheEntry", "CacheStore", "Capabilities",
           "CappedOutput", "DEFAULT_OUTPUT_CAP_BYTES", "ExecResult", "MetadataBlock", "NetworkMode", "OwnedSandbox",
           "Process", "Sandbox", "SandboxSpec", "discard", "enforce_metadata_block", "room_to_start", "to_the_end"]
"""The contract, with the records it speaks in (:mod:`.request`, :mod:`.inventory`), under one name."""

if TYPE_CHECKING:  # the copy-out itself is imported by the backend that copies (after the sandbox is up)
    from .copyout import CopyReport

DEFAULT_OUTPUT_CAP_BYTES = 1 << 20  # 1 MiB kept of each stream; the rest is cut with a note


class CappedOutput:
    """One stream of an exec's output: the first ``cap`` bytes kept, the rest counted, and a note
    saying how much was cut (the rule every ``Sandbox.exec`` applies)."""

    def __init__(self, cap: int) -> None:
        self.cap, self.data, self.dropped = cap, bytearray(), 0

    def add(self, chunk: bytes) -> None:
        room = max(self.cap - len(self.data), 0)
        self.data += chunk[:room]
        self.dropped += max(len(chunk) - room, 0)

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[output truncated: {self.dropped} more bytes not shown (cap {self.cap} bytes)]\n"
        return text


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

    async def snapshot(self, *, retain: bool = False) -> str:
        """Save the filesystem; returns a reference for ``restore``.

        A snapshot is removed with the sandbox that made it, unless ``retain``: then it outlives
        the sandbox (``bench branch --retain-snapshots``) until :meth:`Backend.remove_snapshots`.

        Raises:
            CapabilityError: the backend has no snapshots (see capabilities), or cannot retain one.
        """

    async def restore(self, ref: str) -> None:
        """Restart from a snapshot reference: one this sandbox made, or (where the backend can)
        one another sandbox of the same task made (a branch child in a sandbox of its own)."""

    async def stop(self) -> None:
        """Remove everything this sandbox created. Safe to call twice, never raises."""



async def to_the_end(task: asyncio.Future) -> None:
    """Await ``task`` to its end even when the caller is cancelled (a removal must finish); the
    cancellation is raised once it has."""
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.gather(asyncio.shield(task), return_exceptions=True)
        raise

async def discard(sandbox: Sandbox) -> None:
    """End a sandbox that nothing needs afterwards (no keep, no snapshot, no branch): its own
    ``discard()`` where it has one, a removal that may finish after this returns, even after the
    process exits, as long as a crash still leaves nothing ``bench sandbox cleanup`` cannot find;
    else :meth:`Sandbox.stop`. ``stop()`` stays safe to call afterwards."""
    await (sandbox.discard() if isinstance(sandbox, Discards) else sandbox.stop())


def room_to_start(sandbox: Sandbox) -> contextlib.AbstractAsyncContextManager:
    """An ``async with`` block in which a root exec can start although the agent filled the sandbox's
    process table (a fork bomb at its pids limit: the engine cannot start anything in it). The verifier
    fence enters it when its exec could not start (return code 126), so that a hostile agent cannot
    turn its failed trial into an infrastructure error. The sandbox's own ``room_to_start()`` where it
    has one (the Docker-family backends raise the pids limit for the block, then set it back); else
    nothing changes."""
    return sandbox.room_to_start() if isinstance(sandbox, MakesRoom) else contextlib.nullcontext()


@dataclass(frozen=True)
class MetadataBlock:
    """Whether a started sandbox blocks the cloud metadata endpoints by construction, and how."""

    enforced: bool
    how: str
    """How the block is enforced (for ``network.json``), or why it cannot be here."""
    remedy: str | None = None
    """Where it cannot be: the one line saying which backend or setting gets it."""


REMEDY = ('use --sandbox local (it blocks them by construction), or network_mode "allowlist" or '
          '"no-network", or pass --allow-cloud-metadata')


async def enforce_metadata_block(sandbox: Sandbox) -> MetadataBlock:
    """Block the cloud metadata endpoints (``169.254.169.254`` and friends) from a started sandbox with
    an open network so that nothing in it can undo the block, before the agent starts: the sandbox's
    own ``enforce_metadata_block()`` where it has one (the local sandbox's unreachable routes, a docker
    container's routes and neighbour entries put in by a helper), called again for each agent stretch
    (a restore may have replaced the machine). A backend without one, or one that cannot here, says so
    (``enforced`` False): its agent then starts only when a probe from inside finds no metadata
    service (:mod:`benchflow.jobs.agent_network`)."""
    if not isinstance(sandbox, BlocksMetadata):
        return MetadataBlock(False, f"{type(sandbox).__name__} cannot block them by construction", REMEDY)
    return await sandbox.enforce_metadata_block()


class Backend(abc.ABC):
    """A kind of sandbox that describes itself, so nothing above ``sandbox/`` knows it by name.

    The run engine, the run card, ``bench doctor``, ``bench sandbox list|cleanup``
    and ``bench cache`` ask a backend object only these things. Required:
    :attr:`name`, :attr:`capabilities`, :meth:`available`, :meth:`create`,
    :meth:`exists`, :meth:`leftovers` and :meth:`remove` (a backend that cannot
    list what a ``kill -9`` left would leak it silently, so those are not
    optional). The rest have defaults: no cache, nothing to configure, no kept
    sandboxes.
    """

    name: str
    """The name ``--sandbox`` takes (the built-in table's key or the entry point's name)."""

    @property
    @abc.abstractmethod
    def capabilities(self) -> Capabilities:
        """What this backend can do here, as data."""

    @abc.abstractmethod
    def available(self) -> tuple[bool, str]:
        """(works here, a one-line reason): e.g. an engine ping or a namespace probe. Never raises."""

    @abc.abstractmethod
    def create(self, spec: SandboxSpec) -> Sandbox:
        """A sandbox for ``spec``; nothing is built or started yet. Its ``start()`` leaves nothing
        behind when it fails (or is cancelled), and ``stop()`` removes everything it made."""

    @abc.abstractmethod
    def exists(self, sandbox_id: str) -> bool:
        """Whether anything of the sandbox ``sandbox_id`` is still on the machine."""

    @abc.abstractmethod
    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        """Every sandbox this backend made that still exists, live or not, each saying whether its
        owning process is alive; with ``owner``, only those labelled with that job
        (``benchflow.job``). What a killed run left are the rows with ``owner_alive`` False.

        Raises:
            SandboxUnavailable: the backend cannot be looked at (an engine that does not answer).
        """

    @abc.abstractmethod
    def remove(self, ids: list[str]) -> dict[str, str]:
        """Remove these sandboxes (ids from :meth:`leftovers`) whatever holds them.

        Returns id -> reason for each one that could not be removed; an id already gone counts
        as removed.
        """

    all_scope: str = "only the sandboxes BenchFlow made: it cannot list others"
    """What ``bench sandbox list --all`` lists here, in a few words (said in the help and, for a backend
    whose :meth:`every_sandbox` is None, as a note)."""

    def every_sandbox(self) -> list[OwnedSandbox] | None:
        """Every sandbox in :attr:`all_scope` (``bench sandbox list --all``): BenchFlow's, of every account
        owner, then those it did not make (``foreign``). None (the default): it can list only its own,
        as :meth:`leftovers` does.

        Raises:
            SandboxUnavailable: the backend cannot be looked at.
        """
        return None

    def stale_snapshots(self, owner: str | None = None) -> list[str]:
        """Snapshots of the job ``owner`` (None: of every job) that nothing will use again: made by a
        process that is gone and not retained (what a ``kill -9`` of a run left). Default: none.

        Raises:
            SandboxUnavailable: the backend cannot be looked at.
        """
        return []

    def remove_snapshots(self, refs: list[str]) -> dict[str, str]:
        """Delete these snapshots (retained ones too); ref -> reason for each that stayed."""
        return {}

    def configured(self) -> bool:
        """Whether the user set this backend up on purpose (e.g. gave its URL). Listing and cleanup
        report a configured backend that cannot be looked at as an error, another as a note."""
        return False

    @property
    def cache(self) -> CacheStore | None:
        """What it keeps between runs, for ``bench cache``; None when nothing."""
        return None

    no_keep_reason: str = "its sandboxes cannot outlive a run"
    """Why ``capabilities.keep`` is off, in a few words (``bench sandbox create`` and ``--keep-sandbox`` say it)."""

    @property
    def no_cache_reason(self) -> str:
        """Why :attr:`cache` is None, in a few words (``bench cache --sandbox NAME`` says it)."""
        return "keeps no cache"

    def set_build_concurrency(self, n: int) -> None:
        """At most ``n`` image builds at once in this process (``--build-concurrency``)."""

    def image_status(self, ref: str, *, pull: bool = True) -> tuple[bool | None, str]:
        """Whether a task's pinned image ``ref`` can be run as is here, with a one-line reason.

        ``pull=False`` (dry runs) fetches nothing and may answer None: not known until a run tries.
        A task whose image cannot be had is built from its Dockerfile (:mod:`benchflow.sandbox.fit`).
        """
        return False, f"cannot be run by the {self.name} sandbox"

    def host_resources(self) -> tuple[float | None, int | None]:
        """(CPUs, memory in MiB) a sandbox can be given at most here; None where nothing is enforced."""
        return None, None

    async def create_kept(self, spec: SandboxSpec) -> dict[str, object]:
        """Build and create, not start, a sandbox that outlives this process (``bench sandbox create``).

        Returns ``sandbox_id``, ``name``, ``image``, ``where``, ``built``, ``network_note``.
        """
        from benchflow.errors import CapabilityError

        raise CapabilityError(f"--sandbox {self.name}: its sandboxes cannot outlive a run")

    def attach(self, record: Mapping[str, object], command: list[str]) -> int:
        """Run ``command`` as root in the kept sandbox of ``record`` (a ``kept-sandbox.json``) with
        live output and return its status; without a command, an interactive root shell."""
        from benchflow.errors import CapabilityError

        raise CapabilityError(f"--sandbox {self.name}: its sandboxes cannot be kept")

    def release(self, record: Mapping[str, object]) -> None:
        """Delete the kept sandbox of ``record``; nothing happens when it is already gone."""
        from benchflow.errors import CapabilityError

        raise CapabilityError(f"--sandbox {self.name}: its sandboxes cannot be kept")
