"""The model bridge: how an agent in a sandbox (often with no network) reaches the job's gateway.

The gateway listens only on a unix socket in a private host folder (0700). Inside the sandbox a
tiny forwarder (Python or Node, whichever the image has; agents need one of them anyway) listens
on ``127.0.0.1:<free port>`` and carries each connection to it; the agent's provider variables
point at the forwarder and hold the trial's own key, the only credential in the sandbox. The
transport follows the backend's capabilities:

- ``host_mounts``: each trial gets a folder of its own holding a hard link to the gateway's
  socket, bind-mounted **read-only** at :data:`MOUNT` (connecting to a socket needs no write
  access to the mount, replacing or removing it is refused), and the forwarder relays to it.
  This is the fastest path: one local hop.
- otherwise: the forwarder multiplexes the connections over the stdin/stdout of the exec that
  runs it, and the host connects each one to the gateway (:mod:`.mux`). This needs nothing but
  ``Sandbox.exec_stream``, so it works on remote engines, cloud and cluster backends.

The forwarder's source is passed on its command line (``python3 -c`` / ``node -e``), never read
from a file an agent could replace, and it runs as root so the agent user cannot tamper with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from benchflow.errors import AgentError
from benchflow.sandbox.base import Process, Sandbox

from .mux import Connect, StreamBridge

MOUNT = "/run/benchflow-gateway"
"""Where a trial's bridge folder is mounted (read-only) in its sandbox."""
SOCKET_NAME = "gateway.sock"
_HERE = Path(__file__).resolve().parent
_LAUNCH = ('if command -v python3 >/dev/null 2>&1; then exec python3 -c "$1" "$3" "$4"; fi; '
           'for n in node /opt/benchflow/node/bin/node; do '
           'if command -v "$n" >/dev/null 2>&1; then exec "$n" -e "$2" "$3" "$4"; fi; done; '
           'echo "no python3 or node in the image"; exit 127')


@cache
def _sources() -> tuple[str, str]:
    return (_HERE / "forward.py").read_text(), (_HERE / "forward.js").read_text()


def trial_folder(job_folder: Path, trial: str) -> Path:
    """A new folder for ``trial`` under ``job_folder`` holding a hard link to the gateway's socket.

    Only this folder is mounted into the trial's sandbox, read-only; it is removed with
    :func:`remove_trial_folder` when the trial ends.
    """
    parent = job_folder / "trials"
    parent.mkdir(exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", trial)[:60]
    folder = Path(tempfile.mkdtemp(prefix=f"{slug}-", dir=parent))
    folder.chmod(0o755)  # mkdtemp's is 0700: the agent's uid must reach the socket
    os.link(job_folder / SOCKET_NAME, folder / SOCKET_NAME)
    return folder


def remove_trial_folder(folder: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (folder / SOCKET_NAME).unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()


@dataclass
class OpenBridge:
    """A running bridge of one trial."""

    url: str
    """The gateway as the agent sees it: ``http://127.0.0.1:PORT``."""
    process: Process
    carrier: StreamBridge | None = None
    """The host end of the exec-stream transport (None with the mounted socket)."""

    def close(self) -> None:
        """Stop carrying connections; the forwarder process ends with its sandbox."""
        if self.carrier is not None:
            self.carrier.close()


async def open_bridge(sandbox: Sandbox, gateway_socket: Path, *, mounted: bool,
                      timeout_sec: float = 30.0, connect: Connect | None = None) -> OpenBridge:
    """Start the in-sandbox forwarder for one trial.

    ``mounted``: the trial's folder is mounted at :data:`MOUNT` (relay to the socket there);
    else the connections travel over the forwarder's exec stream to ``gateway_socket`` (or to
    whatever ``connect`` opens: a cluster node's link to the driver's gateway).

    Raises:
        AgentError: the image has neither python3 nor node, or the forwarder did not come up.
    """
    mode, target = ("unix", f"{MOUNT}/{SOCKET_NAME}") if mounted else ("stdio", "-")
    argv = ["sh", "-c", _LAUNCH, "benchflow-bridge", *_sources(), mode, target]
    process = await sandbox.exec_stream(argv, user=None)
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout_sec)
    except asyncio.TimeoutError:
        line = b""
    fields = line.split()
    if len(fields) != 2 or fields[0] != b"ready" or not fields[1].isdigit():
        await process.kill()
        if b"no python3 or node" in line:
            raise AgentError("model bridge: the task image has neither python3 nor node, so the agent cannot "
                             "reach the model gateway from this sandbox", category="install_failure")
        raise AgentError(f"model bridge: the forwarder did not start ({line[:200]!r})", category="infra_failure")
    carrier = None
    if not mounted:
        carrier = StreamBridge(process, connect or (lambda: asyncio.open_unix_connection(str(gateway_socket))))
    return OpenBridge(url=f"http://127.0.0.1:{int(fields[1])}", process=process, carrier=carrier)
