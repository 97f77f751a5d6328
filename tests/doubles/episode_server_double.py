"""A stand-in for an embodied task's episode server: the episode wire protocol (version 2) on a Unix socket.

One JSON request per connection, one JSON line back, as the simulator's server speaks it to the ``robo``
client. The double keeps every request it got and answers from a table of op -> answer (an unknown op gets the
server's ``{"ok": false, "error": "unknown op ..."}``).
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any


class EpisodeServerDouble:
    def __init__(self, path: Path, answers: dict[str, dict[str, Any]]) -> None:
        self.path = path
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> EpisodeServerDouble:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept() the thread waits in
        self._server.close()
        self._thread.join(timeout=10)
        self.path.unlink(missing_ok=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # shut down by __exit__
                return
            with conn:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                request = json.loads(data.decode() or "{}")
                self.requests.append(request)
                op = request.get("op")
                answer = self.answers.get(op, {"ok": False, "error": f"unknown op {op!r}"})
                conn.sendall((json.dumps(answer) + "\n").encode())
