"""The agent's network, set up before it starts: the cloud-metadata block and the ``allowlist`` proxy.

Cloud metadata endpoints (``169.254.169.254`` and friends) hand out the host's cloud credentials to
anything that can reach them. With an open network the agent starts only once a block of them is
**proven**: every endpoint is probed from inside the sandbox and must not answer. A sandbox with no
network (``no-network``, and ``public`` on an engine without a bridge, which runs as ``no-network``)
or with only the egress proxy (``allowlist``: the proxy refuses link-local and private addresses)
cannot reach them, so the block holds by construction and the record says so. ``--allow-cloud-metadata``
or the task's ``sandbox.allow_cloud_metadata`` skips the block; the opt-out is recorded.

Each trial writes ``network.json``: the mode asked and granted, the metadata verdict, and for
``allowlist`` the allowed hosts (every request is in ``egress.jsonl``, :mod:`.egress`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from benchflow.errors import AgentError
from benchflow.records import read_json
from benchflow.util import atomic

from .egress import agent_allowlist, open_egress

ENDPOINTS = ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
"""AWS/GCP/Azure/OCI instance metadata, ECS task metadata, AWS over IPv6, Alibaba Cloud."""
PROBE_PY = """
import socket, sys
hit = []
for host in sys.argv[1:]:
    try:
        socket.create_connection((host, 80), timeout=2).close()
        hit.append(host)
    except OSError:
        pass
print("reached " + " ".join(hit) if hit else "blocked")
"""
PROBE_SH = ('for h in "$@"; do (exec 3<>"/dev/tcp/$h/80") 2>/dev/null && { echo "reached $h"; exit 0; }; done; '
            'echo blocked')


def granted_network(req: Any) -> tuple[str, str]:
    """(asked, granted) network mode of the trial's sandbox."""
    asked = req.task.config.sandbox.network_mode
    fit = getattr(req, "fit", None)
    granted = fit.network[1] if fit is not None and fit.network[1] else asked
    return asked, granted


async def metadata_verdict(req: Any, sandbox: Any, granted: str, asked: str) -> dict[str, Any]:
    """The cloud-metadata record of this trial; ``blocked`` False without an opt-out means the agent
    must not start."""
    if req.spec.allow_cloud_metadata or getattr(req.task.config.sandbox, "allow_cloud_metadata", False):
        by = "--allow-cloud-metadata" if req.spec.allow_cloud_metadata else "task sandbox.allow_cloud_metadata"
        return {"blocked": False, "opt_out": by}
    if granted == "no-network":
        why = "no network: the sandbox has only loopback"
        if asked == "public":
            why += " (public runs as no-network on this engine, which has no bridge network)"
        return {"blocked": True, "proof": why}
    if granted == "allowlist":
        return {"blocked": True, "proof": "allowlist: no network but the egress proxy, which refuses "
                                          "link-local and private addresses"}
    launch = ('command -v python3 >/dev/null 2>&1 && exec python3 -c "$0" "$@"; '
              f'command -v bash >/dev/null 2>&1 && exec bash -c \'{PROBE_SH}\' probe "$@"; echo no-probe')
    probe = await sandbox.exec(["sh", "-c", launch, PROBE_PY, *ENDPOINTS], timeout=30)
    verdict = probe.stdout.strip().splitlines()[-1:] or [""]
    if verdict[0] == "blocked":
        return {"blocked": True, "proof": f"probed from the sandbox: none of {', '.join(ENDPOINTS)} answers"}
    return {"blocked": False, "probe": verdict[0][:200] or f"rc={probe.return_code}"}


@contextlib.asynccontextmanager
async def agent_network(req: Any, sandbox: Any, paths: Any, state: Any, *,
                        continued: bool = False) -> AsyncIterator[None]:
    """Prove the metadata block and, for ``allowlist``, run the egress proxy while the block runs.
    Sets ``state.egress_env``; a failure becomes ``state.error`` (the caller then skips the agent).

    ``continued``: a later stretch of an agent whose earlier stretch already wrote this folder's
    records (``bench branch --parent continue``): ``egress.jsonl`` is appended to, and
    ``network.json`` keeps the earlier record with this stretch's under ``continued``."""
    if state.error is not None:
        yield
        return
    asked, granted = granted_network(req)
    record: dict[str, Any] = {"network_mode": {"asked": asked, "granted": granted}}
    egress = None
    try:
        record["cloud_metadata"] = verdict = await metadata_verdict(req, sandbox, granted, asked)
        if not verdict["blocked"] and "opt_out" not in verdict:
            state.error = ("cloud metadata block not proven (" + verdict["probe"] + "); the agent was not started. "
                           "Pass --allow-cloud-metadata to run anyway")
            state.error_category = "sandbox_setup"
        hosts = agent_allowlist(req.task)
        if hosts is not None and state.error is None:
            record["allowed_hosts"] = hosts
            try:
                egress = await open_egress(sandbox, hosts, paths.egress_log, append=continued)
            except AgentError as exc:
                state.error, state.error_category = f"egress proxy: {exc}", exc.category
            else:
                state.egress_env = egress.env
        earlier = read_json(paths.network) if continued else None
        atomic.write_json(paths.network, {**earlier, "continued": record} if earlier else record)
        yield
    finally:
        if egress is not None:
            await egress.close()
