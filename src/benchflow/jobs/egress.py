"""A trial's ``allowlist`` network: its egress proxy (:mod:`.egress_proxy`) and the bridge to it.

The sandbox runs with no network (the backend delivers ``allowlist`` as loopback only), so the
proxy is its only way out. The proxy listens on a unix socket in a private host folder (0700) and
the sandbox reaches it through a forwarder of the model bridge (:mod:`.bridge`) carried over the
forwarder's exec stream, which needs no host mount and so works on every backend. The agent gets
``HTTP_PROXY``/``HTTPS_PROXY`` (both spellings) pointing at the forwarder and ``NO_PROXY`` for
loopback, where the model bridge listens. Every request, allowed or refused, is a line of the
trial's ``egress.jsonl``; a trial that opens a second proxy for a later stretch of its own agent
(``bench branch --parent continue``) keeps the earlier lines (``append``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.util import atomic

from .bridge import OpenBridge, open_bridge
from .egress_proxy import EgressProxy

SOCKET_NAME = "egress.sock"


def agent_allowlist(task: Any) -> list[str] | None:
    """The hosts the agent may reach when its network is ``allowlist`` (``agent.*`` over
    ``sandbox.*``); None when it is another mode."""
    cfg = task.config
    mode = cfg.agent.network_mode or cfg.sandbox.network_mode
    if mode != "allowlist":
        return None
    return list(cfg.agent.allowed_hosts or cfg.sandbox.allowed_hosts or [])


@dataclass
class TrialEgress:
    """One trial's running proxy and bridge."""

    proxy: EgressProxy
    bridge: OpenBridge
    folder: Path
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """The agent's proxy variables."""
        url = self.bridge.url
        loopback = "localhost,127.0.0.1,::1"
        return {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
                "NO_PROXY": loopback, "no_proxy": loopback}

    async def close(self) -> None:
        self.bridge.close()
        await self.proxy.close()
        shutil.rmtree(self.folder, ignore_errors=True)


async def open_egress(sandbox: Any, allowed_hosts: list[str], log_path: Path, *,
                      append: bool = False) -> TrialEgress:
    """Start the proxy for ``allowed_hosts`` and its bridge into ``sandbox``; requests are written
    to ``log_path`` as they finish, after the ones already there when ``append`` (else it starts empty).

    Raises:
        AgentError: the bridge's forwarder did not start (no python3 or node in the image).
    """
    folder = Path(tempfile.mkdtemp(prefix="benchflow-egress-"))
    requests: list[dict[str, Any]] = _earlier(log_path) if append else []

    def record(entry: dict[str, Any]) -> None:
        requests.append(entry)
        atomic.write_jsonl(log_path, requests)

    atomic.write_jsonl(log_path, requests)
    proxy = EgressProxy(allowed_hosts, folder / SOCKET_NAME, record)
    try:
        await proxy.start()
        bridge = await open_bridge(sandbox, folder / SOCKET_NAME, mounted=False)
    except BaseException:
        await proxy.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return TrialEgress(proxy=proxy, bridge=bridge, folder=folder, requests=requests)


def _earlier(log_path: Path) -> list[dict[str, Any]]:
    """The requests already in ``log_path`` (written atomically, so whole lines); none when missing."""
    try:
        lines = log_path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]
