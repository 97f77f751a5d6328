"""``bench doctor --agent-start NAME``: install an agent in a fresh sandbox and open its ACP connection.

No prompt and no model call: the agent is installed (from its cached image layer
on Docker), launched as the sandbox user, and must answer ``initialize``. A broken
install, a missing login or a crashing adapter shows here, before a batch.
``bench eval smoke`` runs these same stages before its hello-world run (see :mod:`.stages`).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError, ConfigError

from .layout import TrialPaths
from .stages import Stage, finish

LAUNCH_FAILURES = ("pipe_closed",)
"""Handshake error categories meaning the agent process ended before it could answer."""


async def agent_start(name: str, *, sandbox: str = "docker", ca_bundle: Path | None = None,
                      timeout_sec: float = 300.0, model_call: Stage | None = None) -> list[Stage]:
    """Install, launch and handshake ``name`` on the bundled hello-world task; never raises for agent failures.

    Returns the four stages (:data:`.stages.STAGES`); the model-call one is ``model_call`` when
    given, else ``not exercised``.

    Raises:
        ConfigError: unknown agent, or a control (oracle/nop has nothing to start).
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
    model_call = model_call or Stage("first model call", "not exercised", detail="no prompt is sent")
    done: list[Stage] = []
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
                                   trajectory=AcpTrajectoryFile(TrialPaths(trial).acp_trajectory),
                                   user=spec.sandbox_user)
                if not layered:
                    await agent.install(box, ctx)
                done.append(Stage("install", "ok", time.monotonic() - started))
                done += await _launch_and_handshake(agent, box, ctx, timeout_sec)
        except SessionSetupError as exc:
            done.append(Stage("install", "FAIL", detail=_cause(exc.cause)))
        except BenchError as exc:
            if not done:
                done.append(Stage("install", "FAIL", detail=_cause(exc)))
            else:
                raise
    return finish(done, model_call=model_call)


async def _launch_and_handshake(agent: Any, box: Any, ctx: Any, timeout_sec: float) -> list[Stage]:
    started = time.monotonic()
    try:
        answer = await asyncio.wait_for(agent.handshake(box, ctx), timeout_sec)
    except TimeoutError:
        return [Stage("launch", "ok", time.monotonic() - started),
                Stage("handshake", "FAIL", detail=f"no initialize answer within {timeout_sec:g}s")]
    except BenchError as exc:
        if exc.category in LAUNCH_FAILURES:
            return [Stage("launch", "FAIL", detail=_cause(exc))]
        return [Stage("launch", "ok", time.monotonic() - started), Stage("handshake", "FAIL", detail=_cause(exc))]
    seconds = time.monotonic() - started
    version = (answer or {}).get("protocolVersion", "?")
    return [Stage("launch", "ok", seconds),
            Stage("handshake", "ok", seconds, f"answered ACP initialize, protocol {version}")]


def _cause(exc: BaseException) -> str:
    category = getattr(exc, "category", None)
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"{category}: {first}" if category else first
