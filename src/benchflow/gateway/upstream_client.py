"""A small HTTP/1.1 client for the provider side: asyncio streams + h11, pooled.

Why not httpx here: measured against the fake model server, an httpx
``AsyncClient`` call costs ~1.4 ms of CPU, the same call over h11 on an
asyncio stream ~0.3 ms, and the gateway pays that on every model call of
every trial. The gateway needs very little of what httpx adds (no redirects,
cookies, auth flows, proxies or HTTP/2): send bytes, stream bytes back, keep
the connection for the next call.

What it does: one pool of idle keep-alive connections per origin; TLS with
the system trust store plus certifi's; a connect timeout and a per-read
timeout; one retry on a fresh connection when a *reused* connection turns out
closed before any response byte (the server dropped it while idle), which is
safe because request bodies are bytes in memory.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from functools import cache
from urllib.parse import urlsplit

import h11

_Origin = tuple[str, str, int]
_RETRYABLE = (OSError, EOFError, asyncio.IncompleteReadError, h11.RemoteProtocolError)


class UpstreamError(OSError):
    """The provider could not be reached, or the connection broke mid-call. Not a BenchError: an OSError so
    the gateway's socket-error handling answers the agent with a 502 like any broken connection."""


@cache
def _tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    try:
        import certifi

        context.load_verify_locations(certifi.where())
    except (ImportError, OSError):
        pass
    return context


class _Connection:
    def __init__(self, origin: _Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)

    async def next_event(self, read_timeout: float) -> object:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await asyncio.wait_for(self.reader.read(65536), read_timeout)
            self.h11.receive_data(data)

    def reusable(self) -> bool:
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    def close(self) -> None:
        self.writer.close()


class UpstreamResponse:
    """Status and headers of a provider response; the body is read from :meth:`iter_bytes`."""

    def __init__(self, client: UpstreamClient, connection: _Connection, event: h11.Response) -> None:
        self.status_code = event.status_code
        self.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers]
        self._client = client
        self._connection: _Connection | None = connection
        self._complete = False

    def header(self, name: str) -> str:
        """The first value of header ``name`` (lower case), or ''."""
        return next((v for k, v in self.headers if k == name), "")

    async def iter_bytes(self) -> AsyncIterator[bytes]:
        """The body as it arrives; body chunks that arrived together are yielded together."""
        connection = self._connection
        if connection is None:
            return
        pending: list[bytes] = []
        try:
            while True:
                event = connection.h11.next_event()
                if event is h11.NEED_DATA:
                    if pending:
                        yield b"".join(pending)
                        pending = []
                    data = await asyncio.wait_for(connection.reader.read(65536), self._client.read_timeout)
                    connection.h11.receive_data(data)
                elif isinstance(event, h11.Data):
                    pending.append(bytes(event.data))
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    self._complete = True
                    if pending:
                        yield b"".join(pending)
                    return
        except _RETRYABLE as exc:  # asyncio.TimeoutError included (an OSError)
            raise UpstreamError(f"provider response cut: {type(exc).__name__}") from exc

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.iter_bytes()])

    def close(self) -> None:
        """Give the connection back to the pool when the response was read to its end, else drop it."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._complete and connection.reusable():
            connection.h11.start_next_cycle()
            self._client.release(connection)
        else:
            connection.close()


class UpstreamClient:
    """Pooled HTTP/1.1 client; create and use it on one event loop."""

    def __init__(self, connect_timeout: float = 30.0, read_timeout: float = 900.0,
                 max_idle_per_origin: int = 64) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_idle_per_origin = max_idle_per_origin
        self._idle: dict[_Origin, list[_Connection]] = {}

    async def send(self, method: str, url: str, headers: dict[str, str], body: bytes) -> UpstreamResponse:
        """Send a request; returns once the response status and headers are in.

        Raises:
            UpstreamError: the provider is unreachable or closed the connection.
        """
        parts = urlsplit(url)
        scheme = parts.scheme or "http"
        origin = (scheme, parts.hostname or "", parts.port or (443 if scheme == "https" else 80))
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request_headers = [("host", parts.netloc), *headers.items()]
        if body or method not in ("GET", "HEAD"):
            request_headers.append(("content-length", str(len(body))))
        for attempt in range(2):
            connection, reused = await self._checkout(origin)
            try:
                data = connection.h11.send(h11.Request(method=method, target=target, headers=request_headers))
                data += connection.h11.send(h11.Data(data=body)) if body else b""
                data += connection.h11.send(h11.EndOfMessage())
                connection.writer.write(data)
                await connection.writer.drain()
                event = await connection.next_event(self.read_timeout)
                while isinstance(event, h11.InformationalResponse):
                    event = await connection.next_event(self.read_timeout)
                if not isinstance(event, h11.Response):
                    raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} before a response")
                return UpstreamResponse(self, connection, event)
            except h11.LocalProtocolError as exc:  # a request h11 refuses to write (e.g. a bad header value)
                connection.close()
                raise UpstreamError(f"request not sendable: {exc}") from exc
            except TimeoutError as exc:  # before _RETRYABLE: it is an OSError too
                connection.close()
                raise UpstreamError("provider did not answer in time") from exc
            except _RETRYABLE as exc:
                connection.close()
                if reused and attempt == 0:
                    continue
                raise UpstreamError(f"provider unreachable: {type(exc).__name__}") from exc
        raise UpstreamError("provider unreachable")

    async def _checkout(self, origin: _Origin) -> tuple[_Connection, bool]:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if not connection.reader.at_eof() and not connection.writer.is_closing():
                return connection, True
            connection.close()
        scheme, host, port = origin
        tls = _tls_context() if scheme == "https" else None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=tls, server_hostname=host if tls else None, limit=1 << 20),
                self.connect_timeout)
        except (TimeoutError, OSError) as exc:
            raise UpstreamError(f"provider unreachable: {type(exc).__name__}") from exc
        return _Connection(origin, reader, writer), False

    def release(self, connection: _Connection) -> None:
        idle = self._idle.setdefault(connection.origin, [])
        if len(idle) < self.max_idle_per_origin:
            idle.append(connection)
        else:
            connection.close()

    async def aclose(self) -> None:
        """Close every idle connection."""
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
