"""Writes ``trajectory/llm_trajectory.jsonl``: one redacted exchange per line.

The proxy hands each finished exchange to :class:`Recorder` after the agent
has its response. Bodies are parsed, redacted (the shared redactor, plus the
exact values of the real provider keys and the trial key) and appended as one
line. A small exchange (the common case, ~0.1 ms) is written on the spot; a
large one (a long conversation re-sent in full: ~35 ms for 300 KB) goes to a
writer thread, so it does not stall the event loop that serves every trial.
Handing *every* exchange to the thread costs more than it saves: each
hand-off is a GIL switch, and on a busy machine a switch can wait for the OS.

Each line is appended with a single write of a complete line, so a reader
(or a run killed mid-trial) sees whole exchanges, at most missing the last.
Line shape (contracts §3.5)::

    {"schema_version": 1,
     "request": {"timestamp", "method", "path", "headers", "body"},
     "response": {"timestamp", "status_code", "headers", "body"},
     "duration_ms", "metadata": {"request_model", "provider_model", "provider",
                                 "call_type", "stream", "usage", "cost_usd", ...},
     "token_capture": {"prompt_token_ids", "sampled_token_ids", "logprobs", "source"}}  (when captured)
"""

from __future__ import annotations

import json
import os
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.util.redact import redact_obj

SCHEMA_VERSION = 1
_MAX_TEXT_BODY = 64 * 1024
INLINE_BYTES = 32 * 1024
"""Exchanges smaller than this are written inline, larger ones by the writer thread."""


@dataclass
class Exchange:
    """One model call as seen by the proxy; bodies may still be raw bytes."""

    path: Path
    request: dict[str, Any]
    response: dict[str, Any]
    duration_ms: float
    metadata: dict[str, Any] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    size: int = 0
    """Bytes of request and response bodies, to choose inline or threaded writing."""
    token_capture: dict[str, Any] | None = None
    """Token ids and logprobs the upstream returned (``gateway/tokens.py``), or None."""


def _body(value: Any) -> Any:
    if not isinstance(value, (bytes, bytearray)):
        return value
    if not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        text = bytes(value[:_MAX_TEXT_BODY]).decode("utf-8", "replace")
        return text if len(value) <= _MAX_TEXT_BODY else text + f"... [{len(value)} bytes]"


def render(exchange: Exchange) -> str:
    """The redacted JSON line for ``exchange``."""
    record = {
        "schema_version": SCHEMA_VERSION,
        "request": {**exchange.request, "body": _body(exchange.request.get("body"))},
        "response": {**exchange.response, "body": _body(exchange.response.get("body"))},
        "duration_ms": round(exchange.duration_ms, 3),
        "metadata": exchange.metadata,
    }
    if exchange.token_capture is not None:
        record["token_capture"] = exchange.token_capture
    redacted = redact_obj(record, extra_values=exchange.secrets)
    return json.dumps(redacted, ensure_ascii=False, default=str) + "\n"


def append_line(path: Path, line: str) -> None:
    """Append one complete line with a single write."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


class Recorder:
    """A background writer of exchanges; :meth:`flush` waits until all are on disk."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Exchange | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._queued: dict[Path, int] = {}
        """Exchanges waiting in the thread per file: a small one behind them waits too (order)."""
        self.n_write_errors = 0

    def submit(self, exchange: Exchange) -> None:
        """Write ``exchange`` now when small, else queue it for the writer thread."""
        with self._start_lock:
            inline = exchange.size < INLINE_BYTES and not self._queued.get(exchange.path)
            if not inline:
                self._queued[exchange.path] = self._queued.get(exchange.path, 0) + 1
        if inline:
            try:
                append_line(exchange.path, render(exchange))
            except Exception:  # noqa: BLE001 - recording must never fail the agent's call
                self.n_write_errors += 1
            return
        if self._thread is None:
            with self._start_lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="benchflow-gateway-recorder", daemon=True)
                    self._thread.start()
        self._queue.put(exchange)

    def _run(self) -> None:
        while True:
            exchange = self._queue.get()
            try:
                if exchange is None:
                    return
                append_line(exchange.path, render(exchange))
            except Exception:  # noqa: BLE001 - a bad record must not stop the writer
                self.n_write_errors += 1
            finally:
                if exchange is not None:
                    with self._start_lock:
                        left = self._queued.pop(exchange.path, 1) - 1
                        if left:
                            self._queued[exchange.path] = left
                self._queue.task_done()

    def flush(self) -> None:
        """Block until every submitted exchange is written."""
        if self._thread is not None:
            self._queue.join()

    def close(self) -> None:
        """Write what is queued and stop the writer thread."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
