"""The egress proxy of an ``allowlist`` trial: HTTP(S) to the named hosts only, every request recorded.

A sandbox in ``allowlist`` mode has no network of its own (only loopback). Its one way out is this
proxy, which runs on the host, listens on a unix socket in a private folder, and is reached from the
sandbox through the same bridge as the model gateway (:mod:`.bridge`: an in-sandbox forwarder on
``127.0.0.1:<port>``, carried over the exec stream). The agent gets ``HTTP(S)_PROXY`` pointing there.

It speaks the two forms of proxy request: ``CONNECT host:port`` (HTTPS and any TLS: the proxy never
sees inside) and an absolute-URI request (``GET http://host/path``, sent on as origin-form with
``Connection: close``). A host is allowed when it is exactly one of ``allowed_hosts`` (lowercase, a
trailing dot ignored); anything else is answered ``403`` and recorded. Even an allowed name is
refused when it resolves to a loopback, private, link-local (cloud metadata) or unspecified address,
so a name cannot be used to reach the host machine or its network, unless the operator mapped it
in the proxy's resolver (``BENCHFLOW_EGRESS_RESOLVE="name=address,..."``; tests map names to local
servers that way).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

RESOLVE_ENV = "BENCHFLOW_EGRESS_RESOLVE"
CONNECT_TIMEOUT_SEC = 15.0


def resolver_map(text: str | None = None) -> dict[str, str]:
    """``name=address`` pairs of :data:`RESOLVE_ENV` (or ``text``).

    Raises:
        ValueError: a pair that is not ``name=address`` with an IP address.
    """
    raw = os.environ.get(RESOLVE_ENV, "") if text is None else text
    out = {}
    for pair in filter(None, (p.strip() for p in raw.split(","))):
        name, sep, address = pair.partition("=")
        try:
            ipaddress.ip_address(address.strip())
        except ValueError:
            raise ValueError(f"{RESOLVE_ENV}: {pair!r} is not name=address (e.g. api.example.com=10.0.0.5)") from None
        if not sep or not name.strip():
            raise ValueError(f"{RESOLVE_ENV}: {pair!r} is not name=address")
        out[name.strip().lower().rstrip(".")] = address.strip()
    return out


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return not (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified or ip.is_multicast
                or ip.is_reserved)


class EgressProxy:
    """One trial's proxy (see the module docstring). ``record`` gets one dict per request."""

    def __init__(self, allowed_hosts: list[str], socket_path: Path, record: Callable[[dict[str, Any]], None],
                 resolve: Mapping[str, str] | None = None) -> None:
        self.allowed = frozenset(h.lower().rstrip(".") for h in allowed_hosts)
        self.socket_path = socket_path
        self.record = record
        self.resolve = dict(resolver_map() if resolve is None else resolve)
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket_path))

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        entry: dict[str, Any] = {"ts": dt.datetime.now(dt.UTC).isoformat()}
        try:
            await self._handle(reader, writer, entry)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            entry.setdefault("error", f"{type(exc).__name__}: {exc}"[:200])
        finally:
            if "method" in entry:
                self.record(entry)
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      entry: dict[str, Any]) -> None:
        head = await reader.readuntil(b"\r\n\r\n")  # a head over the reader's 64 KiB limit is refused
        line, _, rest = head.partition(b"\r\n")
        parts = line.decode("latin-1").split()
        if len(parts) != 3:
            await _reply(writer, 400, "not an HTTP proxy request")
            entry.update(method="?", allowed=False, status=400)
            return
        method, target, version = parts
        host, port, path = _target(method, target)
        entry.update(method=method, host=host, port=port)
        if host is None:
            entry.update(allowed=False, status=400, reason="not a proxy request (absolute URI or CONNECT)")
            await _reply(writer, 400, entry["reason"])
            return
        if host not in self.allowed:
            entry.update(allowed=False, status=403, reason="not in allowed_hosts")
            await _reply(writer, 403, f"benchflow egress: {host} is not in this task's allowed_hosts")
            return
        try:
            address = await self._address(host, port)
            upstream_r, upstream_w = await asyncio.wait_for(asyncio.open_connection(address, port),
                                                            CONNECT_TIMEOUT_SEC)
        except (TimeoutError, OSError, PermissionError) as exc:
            entry.update(allowed=True, status=502, reason=f"{type(exc).__name__}: {exc}"[:200])
            await _reply(writer, 502, f"benchflow egress: {host}:{port} could not be reached ({entry['reason']})")
            return
        entry.update(allowed=True, address=address)
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            entry["status"] = 200
        else:
            upstream_w.write(_origin_form(method, path, version, rest))
        await _pipe(reader, writer, upstream_r, upstream_w, entry)

    async def _address(self, host: str, port: int) -> str:
        if host in self.resolve:
            return self.resolve[host]
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = [info[4][0] for info in infos]
        public = [a for a in addresses if _public(a)]
        if not public:
            raise PermissionError(f"{host} resolves only to non-public addresses ({', '.join(addresses[:3])})")
        return public[0]


def _target(method: str, target: str) -> tuple[str | None, int, str]:
    """(host, port, origin-form path) of a proxy request; host None when it is not one."""
    from urllib.parse import urlsplit

    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        host = host.strip("[]").lower().rstrip(".")
        return (host or None), (int(port) if port.isdigit() else 443), ""
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        return None, 0, ""
    path = url.path or "/"
    return url.hostname.lower().rstrip("."), url.port or 80, path + (f"?{url.query}" if url.query else "")


def _origin_form(method: str, path: str, version: str, rest: bytes) -> bytes:
    headers = [h for h in rest.split(b"\r\n") if h and not h.lower().startswith((b"proxy-", b"connection:"))]
    return b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *headers, b"Connection: close",
                         b"", b""])


async def _reply(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (text + "\n").encode()
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                 "Connection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()


async def _pipe(client_r, client_w, upstream_r, upstream_w, entry: dict[str, Any]) -> None:
    """Copy both ways until both sides close; records ``bytes_up``/``bytes_down`` on ``entry`` and, for
    a plain HTTP request, the upstream's status."""
    counts = [0, 0]

    async def copy(src, dst, i: int) -> None:
        try:
            while data := await src.read(65536):
                if i == 1 and counts[1] == 0 and "status" not in entry and data.startswith(b"HTTP/"):
                    code = data.split(b" ", 2)[1:2]
                    entry["status"] = int(code[0]) if code and code[0].isdigit() else None
                counts[i] += len(data)
                dst.write(data)
                await dst.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                dst.write_eof() if dst.can_write_eof() else None

    try:
        await asyncio.gather(copy(client_r, upstream_w, 0), copy(upstream_r, client_w, 1))
    finally:
        upstream_w.close()
        entry.update(bytes_up=counts[0], bytes_down=counts[1])
