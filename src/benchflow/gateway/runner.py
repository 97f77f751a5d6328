"""Start and stop the gateway in-process, on a unix socket and/or (when asked) a loopback port.

By default the gateway runs its own event loop in a background thread, so a
run engine that blocks its loop for a moment (a Docker SDK call, a large
file write) never stalls the model calls of every running trial. With
``in_thread=False`` it runs as a task on the caller's loop instead.

    gw = Gateway(GatewayConfig(upstreams=Upstreams.from_env(os.environ), unix_socket=bridge_dir / "gateway.sock"))
    await gw.start()
    route = gw.register_trial("task__ab12cd34", trial_paths.llm_trajectory, token_budget=200_000)
    env = route.agent_env(model="claude-sonnet-4-5")
    ...
    agent_result.update(route.usage())
    gw.unregister_trial("task__ab12cd34")
    await gw.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn

from benchflow.gateway import pricing, tokens
from benchflow.gateway.budget import JobBudget
from benchflow.gateway.recorder import Recorder
from benchflow.gateway.replay import Replay
from benchflow.gateway.routes import TrialRoute
from benchflow.gateway.server import ProxyState, build_app
from benchflow.gateway.upstream import Upstreams
from benchflow.gateway.upstream_client import UpstreamClient


@dataclass
class GatewayConfig:
    """How one job's gateway listens and what it routes to."""

    upstreams: Upstreams
    """Real providers, usually ``Upstreams.from_env(os.environ)``."""
    host: str = "127.0.0.1"
    """Loopback address of the TCP listener, when there is one."""
    port: int | None = None
    """TCP port; 0 picks a free one; None (the default) opens no TCP listener.

    A job reaches its gateway only through ``unix_socket`` (the sandbox bridge), so it
    opens no port that any process of the machine could connect to; tests and the
    overhead benchmark ask for one."""
    unix_socket: str | os.PathLike[str] | None = None
    """Listen on this unix socket path (mode 0666; the per-trial key is the guard)."""
    max_cost_usd: float | None = None
    """Job cap in USD (book-kept; the engine checks :attr:`Gateway.job_cap_reached`)."""
    max_tokens: int | None = None
    """Job cap in tokens (book-kept like ``max_cost_usd``)."""
    in_thread: bool = True
    """Run on an event loop of its own in a background thread."""
    connect_timeout_sec: float = 30.0
    """Connecting to a provider."""
    read_timeout_sec: float = 900.0
    """Longest silence from a provider inside one call (long thinking included)."""
    capture_tokens: bool = field(default_factory=tokens.capture_from_env)
    """Ask OpenAI-compatible upstreams for token ids and logprobs and record them
    (``gateway/tokens.py``); default from ``BENCHFLOW_CAPTURE_TOKENS``."""


def tcp_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket whose connections get TCP_NODELAY.

    asyncio turns Nagle off only on sockets whose ``proto`` is IPPROTO_TCP, and
    ``socket.create_server`` leaves it 0: every keep-alive response written in
    two parts (headers, body) then waits ~40 ms for the client's delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(1024)
    return sock


class GatewayState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    STOPPED = "stopped"


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: Ctrl-C belongs to the run engine."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Gateway:
    """The model gateway of one job."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.state = GatewayState.NEW
        self._proxy = ProxyState(upstreams=config.upstreams, recorder=Recorder(),
                                 job_budget=JobBudget(config.max_cost_usd, config.max_tokens))
        self._routes: dict[str, TrialRoute] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self.port: int | None = None
        self.unix_socket: Path | None = Path(config.unix_socket) if config.unix_socket else None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``; ``http://localhost`` when only the unix socket listens."""
        if self.port is None:
            return "http://localhost"
        host = f"[{self.config.host}]" if ":" in self.config.host else self.config.host
        return f"http://{host}:{self.port}"

    @property
    def upstreams(self) -> Upstreams:
        return self.config.upstreams

    @property
    def serving(self) -> bool:
        """Running and its server still up (a long-lived gateway checks before each run)."""
        alive = self._thread.is_alive() if self._thread is not None else self._task is not None and not self._task.done()
        return self.state is GatewayState.RUNNING and alive

    def _listen(self) -> list[socket.socket]:
        sockets: list[socket.socket] = []
        if self.config.port is not None:
            tcp = tcp_listener(self.config.host, self.config.port)
            self.port = tcp.getsockname()[1]
            sockets.append(tcp)
        if self.unix_socket is not None:
            self.unix_socket.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                self.unix_socket.unlink()
            uds = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            uds.bind(str(self.unix_socket))
            os.chmod(self.unix_socket, 0o666)
            uds.listen(1024)
            sockets.append(uds)
        if not sockets:
            raise ValueError("GatewayConfig: set unix_socket or port (0 for any); both are off")
        return sockets

    async def _serve(self, sockets: list[socket.socket]) -> None:
        client = UpstreamClient(self.config.connect_timeout_sec, self.config.read_timeout_sec)
        self._proxy.client = client
        try:
            assert self._server is not None
            await self._server.serve(sockets=sockets)
        finally:
            await client.aclose()

    def _thread_main(self, sockets: list[socket.socket]) -> None:
        try:
            asyncio.run(self._serve(sockets))
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._failure = exc

    async def start(self) -> None:
        """Listen; returns once the gateway accepts connections.

        Raises:
            RuntimeError: started twice, or the server failed to come up.
            OSError: the port or socket path cannot be bound.
        """
        if self.state is not GatewayState.NEW:
            raise RuntimeError(f"gateway is {self.state.value}; a Gateway starts once")
        sockets = self._listen()
        config = uvicorn.Config(build_app(self._proxy), lifespan="off", log_level="warning", access_log=False,
                                http="h11", loop="asyncio", timeout_keep_alive=120, timeout_graceful_shutdown=1)
        self._server = _Server(config)
        if self.config.in_thread:
            self._thread = threading.Thread(target=self._thread_main, args=(sockets,), name="benchflow-gateway",
                                            daemon=True)
            self._thread.start()
        else:
            self._task = asyncio.create_task(self._serve(sockets))
        while not self._server.started:
            done = (self._thread is not None and not self._thread.is_alive()) or (self._task is not None
                                                                                  and self._task.done())
            if done:
                failure = self._failure or (self._task.exception() if self._task else None)
                raise RuntimeError(f"the model gateway failed to start: {failure!r}")
            await asyncio.sleep(0.002)
        self.state = GatewayState.RUNNING
        threading.Thread(target=pricing.warm, name="benchflow-gateway-prices", daemon=True).start()

    def register_trial(self, trial_id: str, llm_trajectory_path: str | os.PathLike[str],
                       token_budget: int | None = None, turn_budget: int | None = None,
                       upstreams: Upstreams | None = None, *, meter: JobBudget | None = None,
                       capture_tokens: bool | None = None, replay: Replay | None = None) -> TrialRoute:
        """Give a trial its key and URLs; its calls are recorded to ``llm_trajectory_path``.

        ``upstreams`` routes this one registration to providers of its own (a verifier's judge
        holds keys from the task's ``verifier.env``, never the job's); ``meter`` counts its calls
        in a job budget other than the gateway's, ``capture_tokens`` overrides the gateway's
        setting (both for a run served by a shared gateway: :mod:`benchflow.gateway.scope`); ``replay``
        answers its model calls from a recording first (:mod:`benchflow.gateway.replay`).

        Raises:
            RuntimeError: the gateway is not running (its URL is not known yet).
            ValueError: the trial is already registered.
        """
        if self.state is not GatewayState.RUNNING:
            raise RuntimeError(f"register trials on a running gateway (this one is {self.state.value})")
        if trial_id in self._routes:
            raise ValueError(f"trial {trial_id!r} is already registered with the gateway")
        route = TrialRoute(trial_id, Path(llm_trajectory_path), upstreams or self.config.upstreams, self.base_url,
                           token_budget=token_budget, turn_budget=turn_budget,
                           meter=meter if meter is not None else self._proxy.job_budget,
                           capture_tokens=self.config.capture_tokens if capture_tokens is None else capture_tokens,
                           replay=replay)
        # The file exists from the start: "no model call" reads differently from "never routed".
        route.llm_trajectory_path.parent.mkdir(parents=True, exist_ok=True)
        route.llm_trajectory_path.touch()
        self._routes[trial_id] = route
        self._proxy.routes[route.segment] = route
        return route

    def route(self, trial_id: str) -> TrialRoute | None:
        return self._routes.get(trial_id)

    def unregister_trial(self, trial_id: str) -> None:
        """Refuse the trial's key from now on and wait until its exchanges are on disk."""
        route = self._routes.pop(trial_id, None)
        if route is not None:
            self._proxy.routes.pop(route.segment, None)
            if route.replay is not None:  # a refusal it holds goes out now
                route.replay.release()
        self._proxy.recorder.flush()

    def job_spent(self) -> dict[str, float | int]:
        """``{"tokens", "cost_usd", "unpriced_calls"}`` over every trial of the job."""
        return self._proxy.job_budget.spent()

    @property
    def job_cap_reached(self) -> str | None:
        """``max_cost_usd`` / ``max_tokens`` once the job has spent that much, else None."""
        return self._proxy.job_budget.cap_reached

    async def stop(self) -> None:
        """Stop listening, end open calls, write what is queued. Safe to call twice."""
        if self.state is GatewayState.STOPPED:
            return
        self.state = GatewayState.STOPPED
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            await asyncio.shield(asyncio.to_thread(self._thread.join))
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(self._task)
        self._proxy.recorder.close()
        if self.unix_socket is not None:
            with contextlib.suppress(FileNotFoundError):
                self.unix_socket.unlink()
