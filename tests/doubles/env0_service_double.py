#!/usr/bin/env python3
"""TEST DOUBLE: one of env0's mock services (``mock-gmail``, ``mock-slack`` …), stdlib only.

Installed in a task image under each service's program name (the name it is called by is the service's),
it takes env0's command line, ``<name> --db PATH serve --host H --port P --no-mcp``, and answers
``--help`` with exit 0 (how a manifest learns that the image has the service). It keeps its state in the
SQLite file ``--db`` names and serves, on 127.0.0.1 only whatever ``--host`` says:

- ``GET /health``: 200 ``{"status": "ok", "service": NAME}`` (503 with ``--never-ready``);
- ``POST /api/messages`` ``{"channel": ..., "text": ...}``: stores a message, 201;
- ``GET /api/messages``: every stored message, oldest first.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NAME = os.path.basename(sys.argv[0])


def _args(argv: list[str]) -> dict[str, str | bool]:
    opts: dict[str, str | bool] = {"db": f"/tmp/{NAME}.db", "port": "0", "never_ready": False, "serve": False}
    it = iter(argv)
    for arg in it:
        if arg in ("-h", "--help"):
            print(f"usage: {NAME} --db PATH serve --host HOST --port PORT [--no-mcp]")
            sys.exit(0)
        if arg in ("--db", "--port", "--host"):
            opts[arg[2:]] = next(it)
        elif arg == "serve":
            opts["serve"] = True
        elif arg == "--never-ready":
            opts["never_ready"] = True
    return opts


def main() -> None:
    opts = _args(sys.argv[1:])
    if not opts["serve"]:
        sys.exit(f"{NAME}: nothing to do (try serve)")
    db = sqlite3.connect(str(opts["db"]), check_same_thread=False)
    db.execute("CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, channel TEXT, text TEXT)")
    db.commit()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/health":
                self._send(503 if opts["never_ready"] else 200, {"status": "ok", "service": NAME})
            elif self.path == "/api/messages":
                rows = db.execute("SELECT channel, text FROM messages ORDER BY id").fetchall()
                self._send(200, [{"channel": c, "text": t} for c, t in rows])
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            if self.path != "/api/messages":
                self._send(404, {"error": "not found"})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            db.execute("INSERT INTO messages (channel, text) VALUES (?, ?)", (body.get("channel"), body.get("text")))
            db.commit()
            self._send(201, {"ok": True})

        def log_message(self, fmt: str, *args: object) -> None:
            sys.stderr.write(f"{NAME}: {fmt % args}\n")

    server = ThreadingHTTPServer(("127.0.0.1", int(str(opts["port"]))), Handler)
    print(f"{NAME} listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
