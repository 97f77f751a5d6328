"""The agent's network, set up before it starts: the cloud-metadata block and the ``allowlist`` proxy.

Cloud metadata endpoints (``169.254.169.254`` and friends) hand out the host's cloud credentials to
anything that can reach them. With an open network the agent starts only behind a block of them,
**by construction** wherever it can be had: a sandbox with no network (``no-network``, and ``public``
on an engine without a bridge, which runs as ``no-network``), one with only the egress proxy
(``allowlist``: the proxy refuses link-local and private addresses), and one whose backend puts the
block in place so that nothing inside can undo it (:func:`benchflow.sandbox.base.enforce_metadata_block`:
the local sandbox's routes, a docker container's routes and neighbour entries). ``network.json`` says
how (``enforced_by``). Elsewhere a probe from inside the sandbox asks each endpoint for its cloud's
metadata service (:mod:`.metadata_probe`: an answer that looks like the service, not an open port,
which a transparent proxy gives for any address); the agent starts when none answers (``proof``) and
is refused, once and not retried, when one does, with one line naming what gets the block.
``--allow-cloud-metadata`` or the task's ``sandbox.allow_cloud_metadata`` skips all of it; the
opt-out is recorded.

Each trial writes ``network.json``: the mode asked and granted, the metadata verdict, and for
``allowlist`` the allowed hosts (every request is in ``egress.jsonl``, :mod:`.egress`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from benchflow.errors import AgentError
from benchflow.records import read_json
from benchflow.sandbox.base import enforce_metadata_block
from benchflow.util import atomic

from .egress import agent_allowlist, open_egress
from .metadata_probe import CHECKS, probe

ENDPOINTS = tuple(dict.fromkeys(address for _, address, *_ in CHECKS))
"""AWS/GCP/Azure/OCI instance metadata, ECS task metadata, AWS over IPv6, Alibaba Cloud."""
REFUSED = "cloud_metadata"
"""``sandbox_startup_info.refused`` of a trial whose agent was refused for a reachable metadata service
(with ``reason`` ``refused``: attempted once, :func:`benchflow.jobs.retry.deterministic_reason`)."""


def granted_network(req: Any) -> tuple[str, str]:
    """(asked, granted) network mode of the trial's sandbox."""
    asked = req.task.config.sandbox.network_mode
    fit = getattr(req, "fit", None)
    granted = fit.network[1] if fit is not None and fit.network[1] else asked
    return asked, granted


async def metadata_verdict(req: Any, sandbox: Any, granted: str, asked: str) -> dict[str, Any]:
    """The cloud-metadata record of this trial; ``blocked`` False without an opt-out means the agent
    must not start (``remedy`` then says what gets the block)."""
    if req.spec.allow_cloud_metadata or getattr(req.task.config.sandbox, "allow_cloud_metadata", False):
        by = "--allow-cloud-metadata" if req.spec.allow_cloud_metadata else "task sandbox.allow_cloud_metadata"
        return {"blocked": False, "opt_out": by}
    if granted == "no-network":
        why = "no network: the sandbox has only loopback"
        if asked == "public":
            why += " (public runs as no-network on this engine, which has no bridge network)"
        return {"blocked": True, "enforced_by": why}
    if granted == "allowlist":
        return {"blocked": True, "enforced_by": "allowlist: no network but the egress proxy, which refuses "
                                                "link-local and private addresses"}
    block = await enforce_metadata_block(sandbox)
    if block.enforced:
        return {"blocked": True, "enforced_by": block.how}
    found = await probe(sandbox)
    if found.ran and not found.reached:
        return {"blocked": True, "proof": f"probed from the sandbox: no cloud metadata service answers at "
                                          f"{', '.join(ENDPOINTS)} ({found.summary()})", "not_enforced": block.how}
    return {"blocked": False, "probe": found.summary()[:300], "reached": found.reached, "not_enforced": block.how,
            "remedy": block.remedy or "pass --allow-cloud-metadata"}


def refuse(state: Any, verdict: dict[str, Any]) -> None:
    """The agent does not start: one line for the trial's error, marked so that it is not retried."""
    what = "a cloud metadata service answers in the sandbox" if verdict["reached"] else \
        "no probe could show that no cloud metadata service answers in the sandbox"
    state.error = f"{what} ({verdict['probe']}) and the sandbox cannot block it ({verdict['not_enforced']}); " \
                  f"the agent was not started: {verdict['remedy']}"
    state.error_category = "sandbox_setup"
    state.sandbox_startup_info = {"reason": "refused", "refused": REFUSED, "raw_message": state.error[:500]}


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
            refuse(state, verdict)
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
