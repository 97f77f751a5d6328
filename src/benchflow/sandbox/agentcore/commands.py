"""One ``InvokeAgentRuntimeCommand``: a shell line run in the sandbox's runtime session, its output streamed.

The call's response is an event stream (``application/vnd.amazon.eventstream``,
parsed by botocore): ``contentStart``, then ``contentDelta`` events carrying
``stdout``/``stderr`` text, then ``contentStop`` with ``exitCode`` and ``status``
(``COMPLETED`` or ``TIMED_OUT``). The stream is read in a worker thread and
handed to the event loop piece by piece; closing it (a timeout, a cancelled
caller) ends the HTTP response. A command line is at most 65,536 characters, and
AgentCore stops a command after its ``timeout`` (300 s unless given, 3,600 s at
most), so long-lived work runs in the background and is followed by commands
that are restarted (:mod:`.agentcore.stream`).

The shell lines themselves are Daytona's (:mod:`.marked_commands`): both
services take one shell line per command.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import math
import secrets
import socket
import threading
from collections.abc import Callable

from benchflow.errors import InfraError

from ..docker_engine import POOL

MAX_COMMAND_CHARS = 65536
MAX_TIMEOUT_SEC = 3600
CHUNK_BYTES = 45000
"""Raw bytes per upload command: base64 of it (60,000 characters) plus the line stays under the limit."""


def session_id() -> str:
    """A runtime session id (AgentCore wants 33 to 256 characters)."""
    return f"benchflow-{secrets.token_hex(16)}"


class Command:
    """One running command: ``on_output(stream, text)`` is called on the loop for each delta."""

    def __init__(self, sandbox, line: str, *, timeout: float | None,
                 on_output: Callable[[str, str], None]) -> None:
        if len(line) > MAX_COMMAND_CHARS:
            raise InfraError(f"a command of {len(line)} characters is over AgentCore's {MAX_COMMAND_CHARS}")
        self._sandbox = sandbox
        self._line = line
        self._timeout = min(MAX_TIMEOUT_SEC, max(1, math.ceil(timeout))) if timeout else MAX_TIMEOUT_SEC
        self._on_output = on_output
        self._response = None
        self._closed = threading.Event()
        self.exit_code: int | None = None
        self.status: str | None = None

    async def run(self) -> int | None:
        """Run to the end: the exit code (None when the stream ended without one)."""
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(POOL, self._read, loop)
        except asyncio.CancelledError:
            self.close()
            raise
        return self.exit_code

    def _read(self, loop) -> None:
        try:
            self._response = self._sandbox._data.invoke_agent_runtime_command(
                agentRuntimeArn=self._sandbox._arn, runtimeSessionId=self._sandbox._session,
                body={"command": self._line, "timeout": self._timeout})
            if self._closed.is_set():
                return
            for event in self._response["stream"]:
                chunk = event.get("chunk")
                if chunk is None:
                    raise InfraError(f"AgentCore command failed: {event}")
                delta = chunk.get("contentDelta")
                if delta:
                    for name in ("stdout", "stderr"):
                        if delta.get(name):
                            loop.call_soon_threadsafe(self._on_output, name, delta[name])
                stop = chunk.get("contentStop")
                if stop:
                    self.exit_code, self.status = stop["exitCode"], stop["status"]
        except InfraError:
            raise
        except Exception as exc:
            if self._closed.is_set():
                return
            raise InfraError(f"command in AgentCore runtime {self._sandbox.sandbox_id}: {exc}") from exc
        finally:
            self._closed.set()
            if self._response is not None:
                with contextlib.suppress(Exception):
                    self._response["stream"].close()

    def close(self) -> None:
        """End the response from another thread: its socket is shut down, which wakes the reading
        thread (closing the stream itself would wait for the read's lock)."""
        self._closed.set()
        if self._response is not None:
            raw = getattr(self._response["stream"], "_raw_stream", None)
            reader = getattr(getattr(raw, "_fp", None), "fp", None)
            sock = getattr(getattr(reader, "raw", None), "_sock", None)
            with contextlib.suppress(OSError, AttributeError):
                sock.shutdown(socket.SHUT_RDWR)


async def run_line(sandbox, line: str, *, timeout: float | None = None) -> tuple[int | None, str, str]:
    """Run ``line`` to its end: (exit code, stdout, stderr)."""
    out: list[str] = []
    err: list[str] = []
    command = Command(sandbox, line, timeout=timeout,
                      on_output=lambda name, text: (out if name == "stdout" else err).append(text))
    code = await command.run()
    await asyncio.sleep(0)  # the deltas handed over by call_soon_threadsafe run first
    return code, "".join(out), "".join(err)


async def upload(sandbox, data: bytes, path: str, *, parallel: int = 8) -> None:
    """Write ``data`` to ``path`` (mode 0600) through base64 commands of at most :data:`CHUNK_BYTES`,
    ``parallel`` at once into part files, then joined."""
    parts = [data[i:i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)] or [b""]
    gate = asyncio.Semaphore(parallel)

    async def send(index: int, part: bytes) -> None:
        async with gate:
            encoded = base64.b64encode(part).decode("ascii")
            code, _, err = await run_line(
                sandbox, f"umask 077; printf %s {encoded} | base64 -d > {path}.part{index:06d}")
            if code != 0:
                raise InfraError(f"upload to AgentCore runtime {sandbox.sandbox_id}: {err.strip()[-300:]}")

    await asyncio.gather(*(send(i, part) for i, part in enumerate(parts)))
    code, _, err = await run_line(sandbox, f"umask 077; cat {path}.part* > {path} && rm -f {path}.part* "
                                           "< /dev/null")
    if code != 0:
        raise InfraError(f"upload to AgentCore runtime {sandbox.sandbox_id}: {err.strip()[-300:]}")
