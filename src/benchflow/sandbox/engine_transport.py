"""Connections to a Docker engine for :mod:`.engine_api`, by the address's scheme.

``unix://PATH``; ``tcp://HOST:PORT`` (TLS when ``DOCKER_TLS_VERIFY`` or ``DOCKER_CERT_PATH`` is set,
with ``ca.pem``, ``cert.pem``, ``key.pem`` from ``DOCKER_CERT_PATH`` as the docker CLI reads them);
``ssh://[USER@]HOST[:PORT]`` through ``ssh HOST docker system dial-stdio``, as the docker CLI
does, relayed through one end of a socket pair so that reads, writes and half-closes are a
socket's.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
from urllib.parse import urlsplit

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
BLOCK = 1 << 20
"""Bytes per read of an uploaded archive (http.client's default is 8 KiB)."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout, blocksize=BLOCK)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class _SSHConnection(http.client.HTTPConnection):
    """HTTP over ``ssh HOST docker system dial-stdio`` (the engine's socket on the far side)."""

    def __init__(self, url: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout, blocksize=BLOCK)
        parts = urlsplit(url)
        self._argv = ["ssh", "-o", "BatchMode=yes"] + (["-p", str(parts.port)] if parts.port else []) \
            + ["--", f"{parts.username}@{parts.hostname}" if parts.username else str(parts.hostname),
               "docker", "system", "dial-stdio"]
        self._proc: subprocess.Popen | None = None

    def connect(self) -> None:
        mine, theirs = socket.socketpair()
        try:
            self._proc = subprocess.Popen(self._argv, stdin=theirs, stdout=theirs, stderr=subprocess.DEVNULL)
        finally:
            theirs.close()
        mine.settimeout(self.timeout)
        self.sock = mine

    def close(self) -> None:
        super().close()
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait()
            self._proc = None


def _tls_context():
    """The client TLS context from ``DOCKER_TLS_VERIFY`` / ``DOCKER_CERT_PATH`` (as the docker CLI)."""
    import ssl

    verify = bool(os.environ.get("DOCKER_TLS_VERIFY"))
    cert_path = os.environ.get("DOCKER_CERT_PATH") or os.path.join(os.path.expanduser("~"), ".docker")
    ctx = ssl.create_default_context(cafile=os.path.join(cert_path, "ca.pem") if verify else None)
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    cert, key = os.path.join(cert_path, "cert.pem"), os.path.join(cert_path, "key.pem")
    if os.path.exists(cert) and os.path.exists(key):
        ctx.load_cert_chain(cert, key)
    return ctx


def connection_factory(url: str, timeout: float):
    """A function making a new (unconnected) ``HTTPConnection`` to the engine at ``url``."""
    scheme = url.split("://", 1)[0] if "://" in url else "tcp"
    if scheme == "unix":
        path = url.split("://", 1)[1]
        return lambda: _UnixConnection(path, timeout)
    if scheme == "ssh":
        return lambda: _SSHConnection(url, timeout)
    if scheme in ("tcp", "http", "https"):
        parts = urlsplit(url if "://" in url else f"tcp://{url}")
        tls = scheme == "https" or bool(os.environ.get("DOCKER_TLS_VERIFY") or os.environ.get("DOCKER_CERT_PATH"))
        host, port = parts.hostname or "localhost", parts.port or (2376 if tls else 2375)
        if tls:
            ctx = _tls_context()
            return lambda: http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx, blocksize=BLOCK)
        return lambda: http.client.HTTPConnection(host, port, timeout=timeout, blocksize=BLOCK)
    raise ValueError(f"unsupported Docker engine address {url!r} (use unix://, tcp:// or ssh://)")
