"""The daemon process (``python -m benchflow.daemon``): warm engine, runs served over a private socket.

It imports the run engine once, opens the engine connection once (and keeps
the per-process caches that come with it: pulled-image records, build
locks), starts the model gateway once (:class:`benchflow.gateway.scope.SharedGateway`:
no provider keys of its own; each run's agents use it through a scope holding
that run's keys, budget and routes, closed when the run ends), then serves
JSON-line requests on a Unix socket (mode 0600, in a 0700 folder). Every connection's peer credentials (``SO_PEERCRED``) are
checked: a process of another user is dropped before a byte is read.

Requests: ``status``; ``stop`` (refused while a call is active); ``run``
(spec, cwd and the caller's environment, which stays in memory: provider keys
pass over the socket only). Runs take turns, since each runs in the caller's
working folder and environment. A run streams ``event`` lines and ends with
``outcome`` or ``error``; a caller that hangs up (Ctrl-C) cancels its run, whose
trials remove their sandboxes, and gets ``interrupted`` once that is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import socket
import struct
import time
import traceback
from typing import Any

from benchflow.util import atomic

from . import paths
from .paths import DaemonFolderError
from .prepared import Pool

LINE_LIMIT = 64 * 1024 * 1024
WARM_MODULES = ("benchflow.jobs.api", "benchflow.jobs.plan", "benchflow.jobs.trial", "benchflow.jobs.phases",
                "benchflow.jobs.scheduler", "benchflow.jobs.summary", "benchflow.agents", "benchflow.records",
                "benchflow.verify", "benchflow.sandbox.orphans", "benchflow.tasks")


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (``SO_PEERCRED``)."""
    data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", data)
    return uid


def warm() -> str:
    """Import the engine and open the default backend's connection; its name."""
    import importlib

    for name in WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    from benchflow.sandbox import default_backend, get_backend

    name, _reason, (works, _why) = default_backend()
    if works:
        get_backend(name).available()
    return name


class Daemon:
    def __init__(self, pool: Pool, gateway: Any = None) -> None:
        self.pool = pool
        self.gateway = gateway
        """The warm model gateway (``SharedGateway``); a run whose agent calls models uses it."""
        self.active = 0
        self.served = 0
        self.started = time.time()
        self.backend = ""
        self.socket = ""
        self.turn = asyncio.Lock()
        self.stopping = asyncio.Event()

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "started_at": self.started, "uptime_sec": round(time.time() - self.started, 1),
                "active": self.active, "served": self.served, "backend": self.backend,
                "prepared": self.pool.count, "prepare": self.pool.size,
                "gateway": {"serving": self.gateway.serving, "runs": self.gateway.runs} if self.gateway else None,
                "socket": self.socket}

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        try:
            if sock is None or peer_uid(sock) != os.getuid():
                return
            line = await reader.readline()
            request = json.loads(line) if line else {}
            op = request.get("op") if isinstance(request, dict) else None

            def send(message: dict[str, Any]) -> None:
                if not writer.is_closing():
                    writer.write(json.dumps(message, default=str).encode() + b"\n")

            if op == "status":
                send({"type": "status", **self.status()})
            elif op == "stop":
                if self.active:
                    send({"type": "stop", "stopped": False, "active": self.active})
                else:
                    send({"type": "stop", "stopped": True, "pid": os.getpid()})
                    self.stopping.set()
            elif op == "run":
                await self._run(request, reader, send)
            else:
                send({"type": "error", "category": "daemon_protocol", "exit_code": 2,
                      "message": f"unknown request {op!r}"})
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        except (ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def _run(self, request: dict[str, Any], reader: asyncio.StreamReader, send: Any) -> None:
        self.active += 1
        try:
            async with self.turn:
                work = asyncio.create_task(self._execute(request, send))
                hangup = asyncio.create_task(reader.read())  # b"" once the caller closes its side
                done, _ = await asyncio.wait({work, hangup}, return_when=asyncio.FIRST_COMPLETED)
                if work not in done:
                    work.cancel()
                    await asyncio.gather(work, return_exceptions=True)
                    send({"type": "interrupted"})
                hangup.cancel()
        finally:
            self.active -= 1
            self.served += 1

    async def _execute(self, request: dict[str, Any], send: Any) -> None:
        from benchflow.errors import BenchError
        from benchflow.jobs.api import run_async
        from benchflow.jobs.plan import make_plan
        from benchflow.jobs.spec import RunSpec

        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        try:
            os.environ.clear()
            os.environ.update(request.get("env") or {})
            os.chdir(request["cwd"])
            spec = RunSpec.model_validate(request["spec"])
            plan = make_plan(spec)
            plan.backend = self.pool.wrap(plan.backend)
            warm = self.gateway if self.gateway is not None and self.gateway.serving else None  # else its own
            outcome = await run_async(spec, on_event=lambda event: send({"type": "event", "event": event}), plan=plan,
                                      gateway=warm)
            self.pool.after_run(len(plan.units))
            send({"type": "outcome", "job_dir": str(outcome.job_dir), "summary": outcome.summary,
                  "exit_code": outcome.exit_code, "gate": outcome.gate})
        except BenchError as exc:
            send({"type": "error", "category": exc.category, "message": str(exc), "exit_code": exc.exit_code})
        except Exception as exc:  # noqa: BLE001 - the caller prints it as the crash it is
            send({"type": "error", "category": "crash", "message": f"{type(exc).__name__}: {exc}", "exit_code": 1,
                  "traceback": "".join(traceback.format_exception(exc))})
        finally:
            os.environ.clear()
            os.environ.update(saved_env)
            os.chdir(saved_cwd)


def _only_daemon() -> int:
    """Hold ``daemon.lock`` for the process's life: a second daemon of this user refuses to start."""
    fd = os.open(paths.folder() / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DaemonFolderError(f"another bench daemon of yours holds {paths.folder() / 'daemon.lock'}") from None
    return fd


async def serve(ready: Any, pool: Pool) -> None:
    from benchflow.gateway.scope import SharedGateway
    from benchflow.jobs.bridge import SOCKET_NAME

    _only_daemon()
    gateway = await SharedGateway.start(SOCKET_NAME)
    try:
        await _serve(ready, Daemon(pool, gateway))
    finally:
        await gateway.stop()


async def _serve(ready: Any, daemon: Daemon) -> None:
    daemon.backend = warm()
    sock_path = paths.socket_path()
    daemon.socket = str(sock_path)
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()  # the caller checked that no daemon answers on it
    old_umask = os.umask(0o177)
    try:
        server = await asyncio.start_unix_server(daemon.handle, path=str(sock_path), limit=LINE_LIMIT)
    finally:
        os.umask(old_umask)
    os.chmod(sock_path, 0o600)
    atomic.write_text(paths.state_path(), json.dumps({"pid": os.getpid(), "started_at": daemon.started,
                                                     "socket": str(sock_path)}), atomic.PRIVATE)
    ready()
    try:
        async with server:
            await daemon.stopping.wait()
    finally:
        await daemon.pool.close()
        for leftover in (sock_path, paths.state_path()):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def main(argv: list[str] | None = None) -> int:
    """Serve until ``bench daemon stop``; prints ``ready`` (or the error) on stdout once, then goes quiet.
    ``--prepare N --prepare-ttl SEC``: see :mod:`benchflow.daemon.prepared`."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchflow.daemon")
    parser.add_argument("--prepare", type=int, default=0)
    parser.add_argument("--prepare-ttl", type=float, default=300.0)
    args = parser.parse_args(argv)
    def ready() -> None:
        print("ready", flush=True)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)

    try:
        asyncio.run(serve(ready, Pool(args.prepare, args.prepare_ttl)))
    except Exception as exc:  # noqa: BLE001 - reported to `bench daemon start`, which waits for this line
        print(f"error: {exc}", flush=True)
        return 1
    return 0
