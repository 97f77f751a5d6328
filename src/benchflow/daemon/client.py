"""Talking to this user's daemon: start, status, stop, and ``bench run`` under ``BENCHFLOW_DAEMON=auto``.

Kept light (no engine import), since the point of the daemon is a fast start.
A daemon that is gone (its pid dead, its socket left behind) is *stale*: its
files are removed and a run falls back to running in this process, saying so
in one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchflow.errors import BenchError
from benchflow.util.processes import pid_alive

from . import paths

CONNECT_TIMEOUT_SEC = 5.0
ENV = "BENCHFLOW_DAEMON"


class DaemonError(BenchError):
    """The daemon could not be started or did not answer."""

    category = "daemon"


class DaemonInterrupted(BenchError):
    """Ctrl-C during a run served by the daemon: the daemon cancelled it and removed its sandboxes."""

    category = "interrupted"
    exit_code = 130


class RemoteRunError(BenchError):
    """A run the daemon refused or failed, with the category and exit code it would have had in-process."""

    def __init__(self, message: str, *, category: str, exit_code: int) -> None:
        super().__init__(message, category=category)
        self.exit_code = exit_code


@dataclass
class DaemonOutcome:
    """What ``print_final`` and the exit code need, as the daemon reported it."""

    job_dir: str
    summary: dict[str, Any]
    exit_code: int
    gate: dict[str, Any] = field(default_factory=dict)

    @property
    def outcomes_line(self) -> str:
        from benchflow.jobs.summary import outcomes_line

        return outcomes_line(self.summary)


def _state() -> dict[str, Any] | None:
    try:
        data = json.loads(paths.state_path().read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def connect() -> tuple[socket.socket | None, str | None]:
    """(a connected socket, None); or (None, None) when no daemon was started; or (None, why) when
    the one started is gone (its leftover socket and state file are removed)."""
    sock_path, state = paths.socket_path(), _state()
    if not sock_path.exists() and state is None:
        return None, None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_SEC)
    try:
        sock.connect(str(sock_path))
        return sock, None
    except OSError:
        sock.close()
    pid = (state or {}).get("pid")
    if pid_alive(pid):
        return None, f"the daemon (pid {pid}) does not answer on {sock_path}"
    for leftover in (sock_path, paths.state_path()):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    return None, f"the daemon{f' (pid {pid})' if pid else ''} is gone; its stale socket was removed"


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


def ask(op: str) -> tuple[dict[str, Any] | None, str | None]:
    """One request/answer (``status``, ``stop``): (answer, None), or (None, note) as :func:`connect`."""
    sock, note = connect()
    if sock is None:
        return None, note
    with sock:
        _send(sock, {"op": op})
        line = sock.makefile("rb").readline()
    if not line:
        return None, "the daemon closed the connection without answering"
    return json.loads(line), None


def stop(timeout: float = 30.0) -> tuple[dict[str, Any] | None, str | None]:
    """Ask the daemon to stop; once it agreed, wait (up to ``timeout``) until its process is gone."""
    answer, note = ask("stop")
    if answer is not None and answer.get("stopped"):
        deadline = time.monotonic() + timeout
        while pid_alive(answer.get("pid")) and time.monotonic() < deadline:
            time.sleep(0.05)
    return answer, note


def start(prepare: int = 0, prepare_ttl: float = 300.0) -> tuple[dict[str, Any], bool]:
    """Start the daemon unless one answers; (its status, started now?). ``prepare``/``prepare_ttl``:
    :mod:`benchflow.daemon.prepared`.

    Raises:
        DaemonError: the daemon did not come up (its one-line reason).
    """
    status, _note = ask("status")
    if status is not None:
        return status, False
    proc = subprocess.Popen([sys.executable, "-m", "benchflow.daemon", "--prepare", str(prepare),
                             "--prepare-ttl", str(prepare_ttl)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    proc.stdout.close()
    if first != "ready":
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        raise DaemonError(f"bench daemon did not start: {first or 'it exited without a word'}")
    status, note = ask("status")
    if status is None:
        raise DaemonError(f"bench daemon started but does not answer: {note}")
    return status, True


def run(spec: Any, on_event: Callable[[dict[str, Any]], None]) -> DaemonOutcome | None:
    """Run ``spec`` in the daemon, passing its events to ``on_event``; None when there is no daemon
    to run it (a gone one is reported on stderr in one line), so the caller runs it in-process.

    Raises:
        RemoteRunError: the run was refused or failed (message, category and exit code as in-process).
        DaemonInterrupted: Ctrl-C; the daemon cancelled the run and removed its sandboxes.
    """
    sock, note = connect()
    if sock is None:
        if note:
            print(f"bench daemon: {note}; running in this process", file=sys.stderr, flush=True)
        return None
    with sock:
        _send(sock, {"op": "run", "spec": spec.model_dump(mode="json"), "cwd": os.getcwd(), "env": dict(os.environ)})
        sock.settimeout(None)
        stream = sock.makefile("rb")
        try:
            for line in stream:
                done = _handle(json.loads(line), on_event)
                if done is not None:
                    return done
        except KeyboardInterrupt:
            sock.shutdown(socket.SHUT_WR)  # the daemon cancels the run and says when its sandboxes are gone
            for line in stream:
                if json.loads(line).get("type") == "interrupted":
                    break
            raise DaemonInterrupted("interrupted: running trials were cancelled and their sandboxes removed; "
                                    "rerun the same command to resume") from None
    print("bench daemon: the daemon stopped during the run; running in this process (the job resumes)",
          file=sys.stderr, flush=True)
    return None


def _handle(message: dict[str, Any], on_event: Callable[[dict[str, Any]], None]) -> DaemonOutcome | None:
    kind = message.get("type")
    if kind == "event":
        on_event(message["event"])
    elif kind == "outcome":
        return DaemonOutcome(job_dir=message["job_dir"], summary=message["summary"],
                             exit_code=message["exit_code"], gate=message.get("gate") or {})
    elif kind == "error":
        if message.get("traceback"):
            sys.stderr.write(message["traceback"])
        raise RemoteRunError(message["message"], category=message["category"], exit_code=message["exit_code"])
    elif kind == "interrupted":
        raise DaemonInterrupted("interrupted: the daemon cancelled the run; rerun the same command to resume")
    return None
