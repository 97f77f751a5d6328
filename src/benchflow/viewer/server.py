"""Run the viewer: bind a loopback port, print the URL, open a browser when one can show, serve.

:func:`serve` is what ``bench view`` calls; it returns the process exit code
(0, or 3 when a ``--confirm`` page answered "Not this one").
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable, Sequence

from benchflow.errors import UserError

from .app import ConfirmState, create_app
from .sources import resolve_source

HOST = "127.0.0.1"
PORT_TRIES = 20
"""When the asked port is taken, the next ports tried before giving up."""

EXIT_APPROVED = 0
EXIT_REJECTED = 3


def bind_port(port: int, host: str = HOST, tries: int = PORT_TRIES) -> socket.socket:
    """A listening socket on ``port``, or on the next free one; port 0 lets the system choose.

    Raises:
        UserError: every port tried is taken, or the port is out of range.
    """
    if not 0 <= port <= 65535:
        raise UserError(f"--port {port}: a port is a number from 0 to 65535; pass e.g. --port 8888")
    candidates = [0] if port == 0 else list(range(port, min(port + tries, 65536)))
    for candidate in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError:
            sock.close()
            continue
        sock.listen(128)
        sock.set_inheritable(True)
        return sock
    raise UserError(f"--port {port}: ports {candidates[0]}-{candidates[-1]} on {host} are all in use; "
                    "pass a free one with --port (0 picks any free port)")


def _warm(viewer) -> None:
    """Read the jobs before the first page asks; a failure is noted here and shown by the request that meets it."""
    try:
        viewer.warm()
    except Exception as exc:  # noqa: BLE001 - the page's own request shows the error in full
        print(f"Reading the jobs ahead failed ({exc}); the page will show why.", file=sys.stderr, flush=True)


def display_available() -> bool:
    """True when a browser window could be shown, and we are not under a test or CI."""
    if os.environ.get("BENCHFLOW_NO_BROWSER") or os.environ.get("CI") or os.environ.get("PYTEST_CURRENT_TEST"):
        return False
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_app(app, port: int, heading: str, *, open_browser: bool | None, notes: Sequence[str] = (),
            on_server: Callable[[object], None] | None = None,
            before_serve: Callable[[], None] | None = None) -> None:
    """Serve ``app`` on loopback ``port`` (or the next free one) until it stops.

    Prints a note when ``port`` was taken, then ``heading``, the URL to open and ``notes``; opens
    a browser when one can show (``open_browser`` forces it either way). ``on_server`` is given the
    ``uvicorn.Server`` before anything is printed, ``before_serve`` runs just before the browser opens.

    Raises:
        UserError: no port is free (:func:`bind_port`).
    """
    import uvicorn

    sock = bind_port(port)
    actual = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    if on_server is not None:
        on_server(server)
    url = f"http://{HOST}:{actual}/"
    if port not in (0, actual):
        print(f"Port {port} is in use; using {actual}.", flush=True)
    print(heading, flush=True)
    print(f"Open {url} in a browser (Ctrl-C to stop).", flush=True)
    for note in notes:
        print(note, flush=True)
    if before_serve is not None:
        before_serve()
    if open_browser if open_browser is not None else display_available():
        threading.Timer(0.5, webbrowser.open, args=[url]).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def serve(target: str, *, port: int = 8888, confirm: bool = False, redaction_summary: str | None = None,
          open_browser: bool | None = None) -> int:
    """Serve ROLLOUT_DIR ``target`` until Ctrl-C, or until the --confirm bar is answered.

    Args:
        target: a trial folder, job folder, folder of jobs or trajectory .jsonl file.
        port: the port to try first (the next free one is used when it is taken).
        confirm: show the Approve & submit / Not this one bar and stop on the answer.
        redaction_summary: text shown in that bar (display only).
        open_browser: force opening a browser (None: only when a display is available).

    Returns:
        0, or 3 when the confirm bar was answered "Not this one" (or the server
        stopped before any answer: only an explicit approval exits 0).

    Raises:
        UserError: ``target`` is not something the viewer can show, or no port is free.
    """
    source = resolve_source(target)
    state = ConfirmState(redaction_summary=redaction_summary) if confirm else None
    app = create_app(source, confirm=state)

    def stop_on_decision(server) -> None:
        if state is not None:
            state.on_decision = lambda _choice: setattr(server, "should_exit", True)

    def warm_ahead() -> None:
        threading.Thread(target=_warm, args=(app.state.viewer,), daemon=True, name="viewer-warm").start()

    notes = ["Waiting for a decision on the page: Approve & submit, or Not this one."] if state is not None else []
    run_app(app, port, f"Viewing {source.kind} {source.root}", notes=notes, open_browser=open_browser,
            on_server=stop_on_decision, before_serve=warm_ahead)
    if state is None:
        return 0
    if state.decision is None:
        print("The viewer stopped before a decision; not approved.", file=sys.stderr, flush=True)
        return EXIT_REJECTED
    print(f"DECISION: {state.decision}", flush=True)
    return EXIT_APPROVED if state.decision == "approved" else EXIT_REJECTED
