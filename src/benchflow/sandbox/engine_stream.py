"""A hijacked Engine API connection (exec start, container attach) read without losing bytes.

The response headers are read through a buffered reader, and when the engine writes the
first frames right behind the headers (a fast command, a loaded machine) they arrive in
the same read and sit in that reader's buffer: read from the bare socket they would be
gone, and the command's output would come back empty. Here frames are read through the
response's own reader (:meth:`.engine_api.EngineClient.hijack`); writes and half-closes
go to the socket underneath, and the socket's client-wide timeout is lifted (a silent
command may run longer than an API call may take; callers stop a stream by shutting its
socket).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator


class EngineStream:
    """One hijacked connection: :meth:`frames` to read, :meth:`sendall`/:meth:`close_write` to write."""

    def __init__(self, hijacked) -> None:
        self._hijacked = hijacked
        self._reader = hijacked.reader
        self.sock = hijacked.sock
        try:
            self.sock.settimeout(None)
        except (OSError, AttributeError):
            pass

    def frames(self) -> Iterator[tuple[int, bytes]]:
        """(stream number, chunk) for each frame of the engine's multiplexed stream, to its end."""
        while True:
            header = self._read_exactly(8)
            if header is None:
                return
            stream, size = struct.unpack(">BxxxL", header)
            if size == 0:
                continue
            body = self._read_exactly(size)
            if body is None:
                return
            yield stream, body

    def _read_exactly(self, size: int) -> bytes | None:
        data = bytearray()
        while len(data) < size:
            chunk = self._reader.read(size - len(data))
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close_write(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def wake(self) -> None:
        """Shut the socket both ways: unlike close, this wakes a thread blocked reading it."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass

    def close(self) -> None:
        self._hijacked.close()


def exec_stream(api, exec_id: str) -> EngineStream:
    """Start a created exec and hijack its connection (``api``: an :class:`.engine_api.EngineClient`)."""
    return EngineStream(api.hijack(f"/exec/{exec_id}/start", json_body={"Tty": False, "Detach": False}))


def attach_stream(api, container: str) -> EngineStream:
    """Attach to a container's stdout and stderr (before it starts, to miss nothing)."""
    return EngineStream(api.hijack(f"/containers/{container}/attach",
                                   params={"stdout": 1, "stderr": 1, "stream": 1}))
