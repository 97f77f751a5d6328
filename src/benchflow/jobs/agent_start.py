"""``bench doctor --agent-start NAME``: install an agent in a fresh sandbox and open its ACP connection.

No prompt and no model call: the agent is installed (from its cached image layer
on Docker), launched as the sandbox user, and must answer ``initialize``. A broken
install, a missing login or a crashing adapter shows here, before a batch.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError


async def agent_start(name: str, *, sandbox: str = "docker", ca_bundle: Path | None = None,
                      timeout_sec: float = 300.0) -> dict[str, Any]:
    """Install and handshake ``name`` on the bundled hello-world task.

    Returns ``{"agent", "seconds", "initialize": <the agent's answer>}``.

    Raises:
        ConfigError: unknown agent, or a control (oracle/nop has nothing to start).
        AgentError: the install or the handshake failed (its category says which).
    """
    from benchflow import agents
    from benchflow.agents.base import AgentContext
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.demo import HELLO_WORLD
    from benchflow.sandbox import get_backend
    from benchflow.sandbox.from_task import spec_for_task
    from benchflow.sandbox.session import SessionSetupError, sandbox_session
    from benchflow.tasks import load_task

    from .agent_layer import build_layered, wants_layer

    agent = agents.resolve(name)
    if agent.is_control or not hasattr(agent, "handshake"):
        raise ConfigError(f"--agent-start {name}: a control agent has nothing to install or start")
    started = time.monotonic()
    backend = get_backend(sandbox)
    spec = spec_for_task(load_task(HELLO_WORLD), ca_bundle=ca_bundle,
                         labels={"benchflow.doctor": "agent-start"})
    layered = wants_layer(agent, backend)

    async def with_layer(box: Any) -> Any:
        return await build_layered(backend, box, spec, agent, fresh=False)

    with tempfile.TemporaryDirectory(prefix="benchflow-agent-start-") as tmp:
        trial = Path(tmp)
        try:
            async with sandbox_session(backend, spec, prepare=with_layer if layered else None) as session:
                box = session.sandbox
                ctx = AgentContext(task_name="hello-world", workdir=box.workdir, prompts=[], trial_dir=trial,
                                   trajectory=AcpTrajectoryFile(trial / "trajectory" / "acp_trajectory.jsonl"),
                                   user=spec.sandbox_user)
                if not layered:
                    await agent.install(box, ctx)
                answer = await asyncio.wait_for(agent.handshake(box, ctx), timeout_sec)
        except SessionSetupError as exc:
            raise exc.cause from None
    return {"agent": agent.name, "seconds": round(time.monotonic() - started, 1), "initialize": answer}
