"""Test double: a folder served over HTTP on loopback, as a registry host or a hub serves static files
(registry JSON, task archives). ``StaticSite(root).url`` is its base URL; ``close()`` stops it."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path


class StaticSite:
    def __init__(self, root: Path) -> None:
        handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(*a, directory=str(root), **kw)  # noqa: E731
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
