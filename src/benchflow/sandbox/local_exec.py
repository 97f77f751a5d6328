"""Running one namespaced command on the host: output caps, timeouts, streams.

Every command runs as its own bubblewrap process with a fresh PID namespace
and ``--die-with-parent``. Killing that one process therefore kills the
namespace's init and with it every process the command started, however it
daemonised; the same happens if BenchFlow itself dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, MutableSet
from pathlib import Path

from benchflow.sandbox.base import ExecResult

TIMEOUT_RC = 124
_CHUNK = 1 << 16
READ_LIMIT = 64 << 20
"""Longest line ``readline`` accepts on a stream, as on Docker: ACP messages can carry whole files."""


def kill(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL ``proc``'s process group; the namespace goes with it. Never raises.

    The group (``proc`` was started in a new session) holds bubblewrap and the
    namespace init it forks, so this also covers the moment before the init
    has armed its own parent-death signal.
    """
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)


def kill_all(procs: MutableSet[asyncio.subprocess.Process], wait: float = 2.0) -> None:
    """SIGKILL every process and wait (without yielding) until each has exited.

    Waiting for the zombie state rather than reaping leaves the reaping to
    asyncio; it matters because the caller removes folders these processes
    were writing to right after.
    """
    for proc in list(procs):
        kill(proc)
    deadline = time.monotonic() + wait
    for proc in list(procs):
        while proc.returncode is None and time.monotonic() < deadline and not _exited(proc.pid):
            time.sleep(0.002)


def _exited(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


async def _drain(stream: asyncio.StreamReader | None, cap: int) -> tuple[bytes, int]:
    """Read ``stream`` to the end keeping the first ``cap`` bytes; returns (kept, bytes dropped)."""
    if stream is None:
        return b"", 0
    kept = bytearray()
    dropped = 0
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return bytes(kept), dropped
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        dropped += max(0, len(chunk) - max(room, 0))


def _text(data: bytes, dropped: int) -> str:
    text = data.decode("utf-8", errors="replace")
    if dropped:
        text += f"\n[output cut: {dropped} more bytes were not kept]\n"
    return text


async def spawn(argv: list[str], *, stdin: bool, env: Mapping[str, str] | None = None,
                pass_fds: tuple[int, ...] = ()) -> asyncio.subprocess.Process:
    """Start ``argv`` in a session of its own; ``env`` is its whole environment (never on the command line)."""
    return await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
        env=dict(env) if env is not None else None, pass_fds=pass_fds, limit=READ_LIMIT)


async def run(argv: list[str], *, stdin: bytes | None, timeout: float | None, output_cap: int,
              live: MutableSet[asyncio.subprocess.Process], env: Mapping[str, str] | None = None,
              pass_fds: tuple[int, ...] = ()) -> ExecResult:
    """Run ``argv`` to completion; a timeout kills it and returns rc 124 with ``timed_out``.

    Cancellation kills the process before the CancelledError propagates. The
    process sits in ``live`` while it runs, so the sandbox's stop can kill it.
    """
    proc = await spawn(argv, stdin=stdin is not None, env=env, pass_fds=pass_fds)
    live.add(proc)
    try:
        return await finish(proc, stdin=stdin, timeout=timeout, output_cap=output_cap)
    finally:
        live.discard(proc)


async def kill_and_reap(proc: asyncio.subprocess.Process) -> None:
    """Kill ``proc``'s process group and wait until it has exited."""
    kill(proc)
    await proc.wait()


async def finish(proc: asyncio.subprocess.Process, *, stdin: bytes | None, timeout: float | None, output_cap: int,
                 end: Callable[[asyncio.subprocess.Process], Awaitable[None]] = kill_and_reap,
                 abandon: Callable[[], None] | None = None) -> ExecResult:
    """Feed ``stdin`` to the started ``proc``, keep the first ``output_cap`` bytes of each stream and wait.

    When ``timeout`` passes, ``end(proc)`` ends what it runs (by default: kill
    its process group) and the result has rc 124 and ``timed_out``. When the
    wait is cancelled (or fails), ``proc`` is killed, its stream readers are
    cancelled and ``abandon`` is called before the error propagates.
    """
    readers = asyncio.gather(_drain(proc.stdout, output_cap), _drain(proc.stderr, output_cap))
    feeder = asyncio.ensure_future(_feed(proc.stdin, stdin)) if stdin is not None and proc.stdin else None
    timed_out = False
    try:
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout)
        except TimeoutError:
            timed_out = True
            await end(proc)
        (out, out_cut), (err, err_cut) = await readers
        if feeder is not None:
            await feeder
    except BaseException:
        kill(proc)
        for task in (readers, feeder):
            if task is not None:
                task.cancel()
                task.add_done_callback(_retrieved)
        if abandon is not None:
            abandon()
        raise
    rc = TIMEOUT_RC if timed_out else exit_code(proc.returncode)
    if timed_out:
        err += f"\n[timed out after {timeout:g}s; the process tree was killed]\n".encode()
    return ExecResult(return_code=rc, stdout=_text(out, out_cut), stderr=_text(err, err_cut),
                      timed_out=timed_out, truncated=bool(out_cut or err_cut))


def _retrieved(future: asyncio.Future) -> None:
    """Mark a cancelled helper's outcome as seen (else asyncio logs "exception was never retrieved")."""
    if not future.cancelled():
        future.exception()


async def _feed(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Write ``data`` and close stdin; a command that exits without reading it is fine."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        writer.write(data)
        await writer.drain()
        writer.close()


def exit_code(returncode: int | None) -> int:
    """A shell-style exit code: death by signal N is 128+N."""
    if returncode is None:
        return -1
    return 128 - returncode if returncode < 0 else returncode


class LocalProcess:
    """A long-lived sandbox process with open stdio (the ``Process`` protocol of base.py): ``proc``'s pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    async def wait(self) -> int:
        return exit_code(await self._proc.wait())

    async def kill(self) -> None:
        await kill_and_reap(self._proc)
