"""The model bridge: how an agent in a sandbox without a network reaches the job's gateway.

The gateway listens on a unix socket in a host folder that is bind-mounted
into every agent sandbox at :data:`MOUNT`. A tiny forwarder (Python or Node,
whichever the image has; agents need one of them anyway) listens on
``127.0.0.1:PORT`` inside the sandbox and relays each connection to that
socket. The agent's provider variables point at the forwarder. Nothing else
leaves the sandbox: a ``no-network`` task keeps no network at all, and the
socket only answers model calls carrying the trial's own key.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from benchflow.errors import AgentError
from benchflow.sandbox.base import Process, Sandbox

MOUNT = "/run/benchflow-gateway"
SOCKET_NAME = "gateway.sock"
PORT = 41414
_HERE = Path(__file__).resolve().parent


def make_bridge_dir() -> Path:
    """A host folder holding the gateway socket and the forwarders (0755, socket 0666)."""
    folder = Path(tempfile.mkdtemp(prefix="benchflow-gw-"))
    folder.chmod(0o755)
    for name in ("forward.py", "forward.js"):
        shutil.copy(_HERE / name, folder / name)
    return folder


async def start_forwarder(sandbox: Sandbox, user: str | None, timeout_sec: float = 30.0) -> tuple[str, Process]:
    """Start the in-sandbox forwarder; returns (gateway URL as the agent sees it, the process).

    Raises:
        AgentError: the image has neither python3 nor node, or the forwarder did not come up.
    """
    probe = await sandbox.exec(["sh", "-c", "command -v python3 || command -v node || "
                                "ls /opt/benchflow/node/bin/node 2>/dev/null"], timeout=30)
    interpreter = probe.stdout.strip().splitlines()[0] if probe.success and probe.stdout.strip() else ""
    if not interpreter:
        raise AgentError("model bridge: the task image has neither python3 nor node, so the agent cannot "
                         "reach the model gateway from this sandbox", category="install_failure")
    script = f"{MOUNT}/forward.js" if interpreter.endswith("node") else f"{MOUNT}/forward.py"
    process = await sandbox.exec_stream([interpreter, script, f"{MOUNT}/{SOCKET_NAME}", str(PORT)], user=user)
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout_sec)
    except asyncio.TimeoutError:
        line = b""
    if line.strip() != b"ready":
        await process.kill()
        raise AgentError(f"model bridge: the forwarder did not start ({line[:200]!r})", category="infra_failure")
    return f"http://127.0.0.1:{PORT}", process
