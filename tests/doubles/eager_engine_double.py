"""A test double of the Docker Engine API that answers an exec or an attach eagerly.

It speaks the Engine API's HTTP on a Unix socket, like dockerd, for the calls an
exec and a container start make (exec create, exec start, exec inspect, attach,
start, inspect, a pids-limit update, and a container removal, held until the test lets it be answered), and writes each hijacked stream's response headers and every
frame of the command's output in one ``send``: what a real engine does when the
command is faster than the client (a loaded machine). A client that reads the
frames from the bare socket under the HTTP reader loses them.
"""

from __future__ import annotations

import json
import os
import socketserver
import struct
import threading
from http.server import BaseHTTPRequestHandler

UPGRADED = (b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
            b"Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n")


def frame(stream: int, data: bytes) -> bytes:
    return struct.pack(">BxxxL", stream, len(data)) + data


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args) -> None:  # quiet; and a Unix peer has no address to print
        pass

    def _json(self, body: object, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self._body()
        path = self.path.split("?")[0]
        if path.endswith("/update"):
            self._update(path, body)
        elif path.endswith("/exec"):
            self._json({"Id": "exec1"}, 201)
        elif path.endswith("/exec/exec1/start"):
            self._hijacked(frame(1, b"4242\n" + self.server.stdout) + frame(2, self.server.stderr))
        elif path.endswith("/attach"):
            self._hijacked(frame(1, self.server.attach_output))
        elif path.endswith("/start"):
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._json({"message": f"no such endpoint {path}"}, 404)

    def _update(self, path: str, body: bytes) -> None:
        """A pids-limit update: dockerd's route, or (``libpod_only``) Podman's, whose compatible API has
        no such route and answers a bare text 404 as Podman 4 does."""
        libpod = "/libpod/" in path
        if self.server.libpod_only and not libpod:
            data = b"Not Found\n"
            self.send_response(404)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.server.updates.append((path, json.loads(body)))
        self._json(path.split("/")[-2] if libpod else {"Warnings": None}, 201 if libpod else 200)

    def _hijacked(self, frames: bytes) -> None:
        self.wfile.write(UPGRADED + frames)  # one write: headers and output arrive together
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?")[0]
        if path.endswith("/exec/exec1/json"):
            self._json({"Running": False, "ExitCode": 3})
        elif path.endswith("/json"):
            self._json({"State": {"ExitCode": 0, "Status": "running"}})
        else:
            self._json({"message": f"no such endpoint {path}"}, 404)


    def do_DELETE(self) -> None:  # noqa: N802 - a container removal, answered once ``answer_removals`` is set
        self.server.removals.append(self.path)
        self.server.answer_removals.wait(30)
        name = self.path.split("?")[0].rsplit("/", 1)[-1]
        if name == "busy":
            self._json({"message": f"removal of container {name} is already in progress"}, 409)
        elif name == "gone":
            self._json({"message": f"No such container: {name}"}, 404)
        else:
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    stdout = b""
    stderr = b""
    attach_output = b""
    removals: list[str]
    answer_removals: threading.Event
    updates: list[tuple[str, dict]]
    libpod_only = False


class EagerEngine:
    """The double on ``path``; ``url`` is its ``unix://`` address. Use as a context manager."""

    def __init__(self, path: str, *, stdout: bytes = b"", stderr: bytes = b"",
                 attach_output: bytes = b"", libpod_only: bool = False) -> None:
        self.path = path
        self.url = f"unix://{path}"
        self._server = _Server(path, _Handler)
        self._server.stdout, self._server.stderr = stdout, stderr
        self._server.attach_output = attach_output
        self._server.removals, self._server.answer_removals = [], threading.Event()
        self.removals = self._server.removals
        self._server.libpod_only, self._server.updates = libpod_only, []
        self.updates = self._server.updates
        """(path, JSON body) of each container update received."""
        """The request lines' paths of the container removals received."""
        self.answer_removals = self._server.answer_removals
        """Set it to let the double answer removals (it holds them until then)."""

    def __enter__(self) -> "EagerEngine":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        os.unlink(self.path)
