"""The job's model gateway, reached from cluster nodes: the driver serves it, a node's trials use it.

The gateway stays in the driver process, listening only on its private unix socket. For a
remote executor the driver also opens a *link*: one TCP listener on an address the nodes can
reach. Every connection starts with one JSON line holding the job's link token (random, made
per run, compared in constant time) and an operation:

- ``pipe``: from then on the connection is relayed byte for byte to the gateway's socket; the
  node's bridge carries one agent connection over it (the sandbox never sees the link).
- ``open`` / ``close`` / ``budget``: the trial's route on the gateway (its key and provider
  variables; its usage, provider-failure diagnosis and ``llm_trajectory.jsonl`` when it ends;
  whether it has spent its token or turn budget), answered with one JSON line.
- ``phase``: the trial entered a phase (install, agent, verifier …), for the driver's progress view.

No upstream key crosses the link: a node gets only the trial's gateway key, as a sandbox does.
On a node, :class:`RemoteModelAccess` stands in for :class:`benchflow.jobs.model_access.ModelAccess`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import secrets
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import InfraError
from benchflow.jobs.bridge import SOCKET_NAME, OpenBridge, open_bridge
from benchflow.util import atomic

_HELLO_TIMEOUT_SEC = 10.0
_CALL_TIMEOUT_SEC = 30.0
_BUDGET_POLL_SEC = 1.0


@dataclass(frozen=True)
class LinkAddress:
    """Where a node reaches the driver's gateway link, and the token it must present."""

    host: str
    port: int
    token: str = field(repr=False)


class GatewayLink:
    """The driver's end: serves the job's ``ModelAccess`` to nodes on ``host``:``port`` (0: the OS picks)."""

    def __init__(self, models: Any, host: str, port: int = 0,
                 on_phase: Callable[[str, str], None] | None = None) -> None:
        self.models = models
        self.host = host
        self.port = port
        self.on_phase = on_phase
        self.token = secrets.token_urlsafe(32)
        self._server: asyncio.AbstractServer | None = None
        self._records = models.folder / "remote"

    async def start(self) -> LinkAddress:
        self._records.mkdir(mode=0o700, exist_ok=True)
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        port = self._server.sockets[0].getsockname()[1]
        return LinkAddress(self.host, port, self.token)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), _HELLO_TIMEOUT_SEC)
            hello = json.loads(line or b"null")
            if not isinstance(hello, dict) or not hmac.compare_digest(str(hello.get("token", "")), self.token):
                return
            if hello.get("op") == "pipe":
                await self._pipe(reader, writer)
                return
            answer = self._answer(hello)
            writer.write(json.dumps(answer, default=str).encode() + b"\n")
            await writer.drain()
        except (TimeoutError, ValueError, OSError, ConnectionError):
            return
        finally:
            writer.close()

    def _answer(self, hello: dict[str, Any]) -> dict[str, Any]:
        op, trial = hello.get("op"), str(hello.get("trial", ""))
        try:
            if op == "open":
                return {"variables": self._open(trial, hello.get("model"), str(hello.get("url", "")))}
            if op == "close":
                info = self.models.close_trial(trial, int(hello.get("n_tool_calls") or 0))
                record = self._records / f"{trial}.jsonl"
                text = record.read_text() if record.is_file() else None
                record.unlink(missing_ok=True)
                return {"info": info, "llm_trajectory": text}
            if op == "budget":
                return {"exhausted": self.models.stop_reason(trial)}
            if op == "phase":
                if self.on_phase is not None:
                    self.on_phase(trial, str(hello.get("phase", "")))
                return {}
        except (ValueError, RuntimeError, OSError) as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        return {"error": f"unknown operation {op!r}"}

    def _open(self, trial: str, model: str | None, url: str) -> dict[str, str]:
        from benchflow.jobs.model_access import keys_replaced

        if "/" in trial or trial.startswith("."):
            raise ValueError(f"bad trial name {trial!r}")
        gateway = self.models.gateway
        route = gateway.register_trial(trial, self._records / f"{trial}.jsonl",
                                       token_budget=self.models.token_budget, turn_budget=self.models.turn_budget)
        return {**keys_replaced(self.models.agent_env, set(gateway.upstreams.secrets()), route.key),
                **route.agent_env(model, gateway_url=url)}

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(str(self.models.folder / SOCKET_NAME))

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (OSError, ConnectionError):
                pass
            finally:
                with contextlib.suppress(OSError, RuntimeError):
                    dst.write_eof() if dst.can_write_eof() else dst.close()

        try:
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        finally:
            up_writer.close()


class RemoteModelAccess:
    """A node's stand-in for the job's ``ModelAccess``: the same calls, answered by the driver's link.

    The bridge always uses the sandbox's exec stream (no host folder of the driver can be mounted
    on a node); each agent connection is a ``pipe`` connection to the link.
    """

    gateway = None
    """No gateway object on a node: a verifier's judge call starts a private one, as with no job gateway."""

    def __init__(self, link: LinkAddress) -> None:
        self.link = link
        self._bridges: dict[str, OpenBridge] = {}
        self._trajectories: dict[str, Path] = {}
        self._budget: dict[str, tuple[float, str | None]] = {}
        self._reporter = ThreadPoolExecutor(max_workers=1)  # one thread: phases arrive in order
        self._reports_failed = False

    def mounts_for(self, trial: str, capabilities: Any) -> dict[str, Path]:
        return {}

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection(self.link.host, self.link.port)
        writer.write(json.dumps({"op": "pipe", "token": self.link.token}).encode() + b"\n")
        await writer.drain()
        return reader, writer

    def _call(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One operation on the link (blocking: the answers are local bookkeeping on the driver)."""
        try:
            with socket.create_connection((self.link.host, self.link.port), timeout=_CALL_TIMEOUT_SEC) as conn:
                conn.sendall(json.dumps({**payload, "token": self.link.token}).encode() + b"\n")
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
        except OSError as exc:
            raise InfraError(f"model gateway link {self.link.host}:{self.link.port}: {exc}") from exc
        try:
            answer = json.loads(data)
        except ValueError:
            raise InfraError(f"model gateway link {self.link.host}:{self.link.port}: no answer "
                             "(wrong token, or the driver is gone)") from None
        if "error" in answer:
            raise InfraError(f"model gateway link: {answer['error']}")
        return answer

    async def open_trial(self, agent: Any, trial: str, llm_trajectory: Path, sandbox: Any, *,
                         model: str | None) -> dict[str, str]:
        bridge = await open_bridge(sandbox, Path("/nonexistent"), mounted=False, connect=self._connect)
        self._bridges[trial] = bridge
        self._trajectories[trial] = llm_trajectory
        answer = await asyncio.to_thread(self._call, {"op": "open", "trial": trial, "model": model, "url": bridge.url})
        variables = dict(answer["variables"])
        config = getattr(agent, "config", None)
        if config is None:
            return variables
        from benchflow.agents.agent_env import gateway_env_from

        return gateway_env_from(config, variables, model)

    def close_trial(self, trial: str, n_tool_calls: int) -> dict[str, Any]:
        bridge = self._bridges.pop(trial, None)
        if bridge is not None:
            bridge.close()
        answer = self._call({"op": "close", "trial": trial, "n_tool_calls": n_tool_calls})
        path = self._trajectories.pop(trial, None)
        if path is not None and answer.get("llm_trajectory") is not None:
            atomic.write_text(path, answer["llm_trajectory"])
        return answer.get("info") or {}

    def stop_reason(self, trial: str) -> str | None:
        """Why the trial's agent must stop (its spent budget), asked of the driver at most once a second per
        trial (the agent's stop check runs far more often)."""
        now = time.monotonic()
        asked_at, value = self._budget.get(trial, (0.0, None))
        if value is None and now - asked_at >= _BUDGET_POLL_SEC:
            try:
                value = self._call({"op": "budget", "trial": trial}).get("exhausted")
            except InfraError:
                value = None
            self._budget[trial] = (now, value)
        return value

    def report_phase(self, trial: str, phase: str) -> None:
        """Tell the driver (best effort, never waited for): a lost report only dims the progress view,
        and after one fails no more are sent."""
        def send() -> None:
            if self._reports_failed:
                return
            try:
                self._call({"op": "phase", "trial": trial, "phase": phase})
            except InfraError:
                self._reports_failed = True

        self._reporter.submit(send)

    async def stop(self) -> None:
        for bridge in self._bridges.values():
            bridge.close()
        self._bridges.clear()
        self._reporter.shutdown(wait=False)
