"""The host end of the exec-stream bridge: connections the sandbox opens, carried to the gateway.

The in-sandbox forwarder (``forward.py``/``forward.js`` in ``stdio`` mode) accepts the agent's
connections on loopback and multiplexes them over the stdin/stdout of the exec that runs it. Here
each OPEN frame becomes a connection to the gateway's unix socket on this host, DATA frames are
written to it, and what the gateway answers goes back as DATA frames; CLOSE from either side
closes the connection (as the mounted-socket relay does when one side ends). Frames: a 9-byte
``!BII`` header (kind, connection id, payload length) then the payload.

Only the sandbox's exec stream is needed, so this works wherever ``Sandbox.exec_stream`` does:
a remote engine, a cloud or a cluster backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Awaitable, Callable

from benchflow.sandbox.base import AsyncReader, Process

OPEN, DATA, CLOSE = 1, 2, 3
HEADER = struct.Struct("!BII")
CHUNK = 65536

Connect = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


async def read_exact(reader: AsyncReader, size: int) -> bytes | None:
    """``size`` bytes from ``reader``; None at end of stream before that many arrived."""
    data = b""
    while len(data) < size:
        chunk = await reader.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class StreamBridge:
    """Serves one forwarder process until its stdout ends (the sandbox stopped) or ``close()``."""

    def __init__(self, process: Process, connect: Connect) -> None:
        self.process = process
        self.connect = connect
        self._inboxes: dict[int, asyncio.Queue[bytes | None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._broken = False
        self.task = asyncio.create_task(self._serve())

    def _send(self, kind: int, cid: int, data: bytes = b"") -> None:
        if self._broken:
            return
        try:
            self.process.stdin.write(HEADER.pack(kind, cid, len(data)) + data)
        except (OSError, RuntimeError):  # the exec is gone; the sandbox is stopping
            self._broken = True

    async def _serve(self) -> None:
        try:
            while True:
                head = await read_exact(self.process.stdout, HEADER.size)
                if head is None:
                    return
                kind, cid, size = HEADER.unpack(head)
                data = await read_exact(self.process.stdout, size) if size else b""
                if data is None:
                    return
                if kind == OPEN:
                    inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
                    self._inboxes[cid] = inbox
                    task = asyncio.create_task(self._carry(cid, inbox))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                elif kind == DATA and cid in self._inboxes:
                    self._inboxes[cid].put_nowait(data)
                elif kind == CLOSE and cid in self._inboxes:
                    self._inboxes.pop(cid).put_nowait(None)
        finally:
            for task in list(self._tasks):
                task.cancel()

    async def _carry(self, cid: int, inbox: asyncio.Queue[bytes | None]) -> None:
        """One connection: sandbox → gateway from ``inbox``, gateway → sandbox as DATA frames."""
        try:
            reader, writer = await self.connect()
        except OSError:
            self._inboxes.pop(cid, None)
            self._send(CLOSE, cid)
            return

        async def to_gateway() -> None:
            with contextlib.suppress(OSError):
                while (data := await inbox.get()) is not None:
                    writer.write(data)
                    await writer.drain()
            writer.close()

        async def to_sandbox() -> None:
            with contextlib.suppress(OSError):
                while data := await reader.read(CHUNK):
                    self._send(DATA, cid, data)
            self._send(CLOSE, cid)

        try:
            await asyncio.gather(to_gateway(), to_sandbox())
        finally:
            self._inboxes.pop(cid, None)
            writer.close()

    def close(self) -> None:
        """Stop carrying (the forwarder itself ends with its sandbox)."""
        self.task.cancel()
