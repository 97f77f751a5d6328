"""A hijacked Engine API connection (exec start, container attach) read without losing bytes.

docker-py's ``socket=True`` hands back the bare socket under the HTTP response. But the
response headers were read through a buffered reader, and when the engine writes the
first frames right behind the headers (a fast command, a loaded machine) they arrive in
the same read and sit in that reader's buffer: read from the bare socket they are gone,
and the command's output comes back empty. Here frames are read through the response's
own reader; writes and half-closes go to the socket underneath, and the socket's
client-wide timeout is lifted (a silent command may run longer than an API call may
take; callers stop a stream by shutting its socket).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

UPGRADE = {"Connection": "Upgrade", "Upgrade": "tcp"}


def raw_socket(sock):
    """The socket object that can ``sendall`` and half-close (unix, tcp, TLS or ssh)."""
    return getattr(sock, "_sock", sock)


class EngineStream:
    """One hijacked connection: :meth:`frames` to read, :meth:`sendall`/:meth:`close_write` to write."""

    def __init__(self, api, response) -> None:
        self._response = response
        self._reader = response.raw._fp.fp
        self.sock = api._get_raw_response_socket(response)
        try:
            raw_socket(self.sock).settimeout(None)
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
        raw_socket(self.sock).sendall(data)

    def close_write(self) -> None:
        raw = raw_socket(self.sock)
        try:
            if hasattr(raw, "shutdown_write"):  # paramiko channel (ssh://)
                raw.shutdown_write()
            else:
                raw.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def wake(self) -> None:
        """Shut the socket both ways: unlike close, this wakes a thread blocked reading it."""
        try:
            raw_socket(self.sock).shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass

    def close(self) -> None:
        for target in (raw_socket(self.sock), self.sock, self._response):
            try:
                target.close()
            except (OSError, ValueError, AttributeError):  # closed already, or its socket is gone
                pass


def exec_stream(api, exec_id: str) -> EngineStream:
    """Start a created exec and hijack its connection."""
    response = api._post_json(api._url("/exec/{0}/start", exec_id), headers=UPGRADE,
                              data={"Tty": False, "Detach": False}, stream=True)
    return EngineStream(api, response)


def attach_stream(api, container: str) -> EngineStream:
    """Attach to a container's stdout and stderr (before it starts, to miss nothing)."""
    response = api.post(api._url("/containers/{0}/attach", container), None, headers=UPGRADE,
                        params={"stdout": 1, "stderr": 1, "stream": 1}, stream=True)
    return EngineStream(api, response)
