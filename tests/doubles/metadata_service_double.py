"""Test double: a stand-in cloud metadata service, or a transparent proxy that answers every address,
inside a network namespace the test makes (never on the host's own network).

:func:`metadata_namespace` makes a namespace with only ``lo``, on which the metadata endpoints
(``169.254.169.254``, ``169.254.170.2``, ``100.100.100.200``, ``fd00:ec2::254``) and a control
address (:data:`CONTROL`) are local addresses; :func:`serve_in` starts this module there as a
program, which listens on port 80 and answers as ``--mode``:

- ``aws``: ``GET /latest/meta-data/`` lists ``instance-id`` (IMDSv1); ``PUT /latest/api/token`` gives
  a token with its ``X-Aws-Ec2-Metadata-Token-Ttl-Seconds`` header (IMDSv2);
- ``gcp``: with ``Metadata-Flavor: Google`` asked, answers with that header; else 403;
- ``azure``: with ``Metadata: true``, JSON with ``compute``; ``ecs``: JSON with ``TaskARN``;
- ``proxy-502``: whatever is asked, ``502 Bad Gateway`` (a transparent proxy with nowhere to go);
- ``silent``: accepts and closes without a byte (a transparent proxy that gives up).

Every connection is one line on stdout (``hit <address> <first request line>``) after the
``ready`` line, so a test sees what reached it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

ENDPOINTS = ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
CONTROL = "10.203.0.1"
"""An address the block leaves alone, local in the namespace: what shows that the network works."""

AWS_LISTING = "ami-id\ninstance-id\ninstance-type\nlocal-ipv4\n"


def answer(mode: str, request: str) -> bytes | None:
    """The response to one request head; None: close without a byte."""
    first, *rest = request.split("\r\n")
    method, path = (first.split() + ["", ""])[:2]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in rest if line)}
    if mode == "silent":
        return None
    if mode == "proxy-502":
        return _response(502, "Bad Gateway", "<html>bad gateway</html>")
    if mode == "aws" and method == "GET" and path == "/latest/meta-data/":
        return _response(200, "OK", AWS_LISTING)
    if mode == "aws" and method == "PUT" and path == "/latest/api/token":
        return _response(200, "OK", "AQAEAN" + secrets.token_hex(24), {"X-Aws-Ec2-Metadata-Token-Ttl-Seconds": "60"})
    if mode == "gcp" and path.startswith("/computeMetadata/v1/"):
        if headers.get("metadata-flavor") != "Google":
            return _response(403, "Forbidden", "Missing Metadata-Flavor:Google header.")
        return _response(200, "OK", "instance/\nproject/\n", {"Metadata-Flavor": "Google"})
    if mode == "azure" and path.startswith("/metadata/instance") and headers.get("metadata") == "true":
        return _response(200, "OK", json.dumps({"compute": {"vmId": "x"}, "network": {}}))
    if mode == "ecs" and path == "/v2/metadata":
        return _response(200, "OK", json.dumps({"Cluster": "default", "TaskARN": "arn:aws:ecs:x"}))
    return _response(404, "Not Found", "not found")


def _response(status: int, reason: str, body: str, headers: dict[str, str] | None = None) -> bytes:
    data = body.encode()
    head = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(data)}", "Connection: close",
            *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def _serve(sock: socket.socket, mode: str, lock: threading.Lock) -> None:
    while True:
        conn, _ = sock.accept()
        with conn:
            conn.settimeout(5)
            here = conn.getsockname()[0]
            data = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            request = data.decode("latin-1")
            with lock:
                print(f"hit {here} {request.split(chr(13))[0][:100]}", flush=True)
            reply = answer(mode, request)
            if reply is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(reply)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True, choices=["aws", "gcp", "azure", "ecs", "proxy-502", "silent"])
    args = parser.parse_args(argv)
    lock = threading.Lock()
    sockets = []
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((address, 80))
        sock.listen(64)
        sockets.append(sock)
    for sock in sockets:
        threading.Thread(target=_serve, args=(sock, args.mode, lock), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes stdin


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def metadata_namespace() -> Iterator[str]:
    """A new network namespace with only ``lo``, holding the endpoints and :data:`CONTROL`; its name."""
    name = f"bf-metadata-{secrets.token_hex(4)}"
    _ip("netns", "add", name)
    try:
        _ip("-n", name, "link", "set", "lo", "up")
        for address in (*ENDPOINTS, CONTROL):
            _ip("-n", name, "addr", "add", f"{address}/{128 if ':' in address else 32}", "dev", "lo")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


class Served:
    """The double running in a namespace: :meth:`hits` so far; :meth:`close` ends it."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.append(line.strip())

    def hits(self) -> list[str]:
        return [line for line in self._lines if line.startswith("hit ")]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.kill()
        self.process.wait()


@contextlib.contextmanager
def serve_in(namespace: str, mode: str) -> Iterator[Served]:
    """This double as ``--mode`` in ``namespace``, once it listens."""
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(["ip", "netns", "exec", namespace, sys.executable, "-m",
                                "tests.doubles.metadata_service_double", "--mode", mode],
                               cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    first = process.stdout.readline().strip()  # blocks until it listens (or exits)
    if first != "ready":
        process.kill()
        raise RuntimeError(f"the metadata service double did not start: {first!r}")
    served = Served(process)
    try:
        yield served
    finally:
        served.close()


if __name__ == "__main__":
    main()
