"""Agent installs as cached image layers (backends with ``image_layers``): install once per (agent,
version, task image).

The agent's install recipe runs as an image build ``FROM`` the task's image,
with the host network (sandboxes themselves may have none) and the host CA
bundle when ``--ca-bundle`` asks for it. The layer's tag is keyed by the task
image and the agent's whole registry entry, so a second trial of the same
agent on the same task starts from it at once; ``--fresh-install`` gives every
trial a layer of its own. The build's output is the trial's
``agent/install-stdout.txt``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from pathlib import Path
from typing import Any

from benchflow.sandbox.base import SandboxSpec
from benchflow.util import atomic

_RUN = ('RUN ["/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then bash /tmp/benchflow-install.sh; '
        'else sh /tmp/benchflow-install.sh; fi && rm -f /tmp/benchflow-install.sh"]')


def wants_layer(agent: Any, backend: Any) -> bool:
    """Whether ``agent`` installs as an image layer: it has an install, and ``backend`` can build
    image layers (``Capabilities.image_layers``); else it installs in the running sandbox."""
    config = getattr(agent, "config", None)
    return (not agent.is_control and config is not None and config.install.kind != "none"
            and backend.capabilities.image_layers)


def cache_dir() -> Path:
    from benchflow.util.cache_dir import cache_root

    return cache_root() / "agent-layers"


def layer_spec(task_spec: SandboxSpec, task_image: str, agent: Any, *, fresh: bool) -> SandboxSpec:
    """The spec of the task image plus the agent's install (a context folder written once per key)."""
    from benchflow.agents.install import install_script

    config = agent.config
    script = install_script(config)
    nonce = uuid.uuid4().hex if fresh else ""
    key_source = "\n".join([task_image, config.model_dump_json(), script, nonce])
    key = hashlib.sha256(key_source.encode()).hexdigest()
    context = cache_dir() / key[:32]
    if not (context / "Dockerfile").is_file():
        # A fresh install must really run: a changed line before the install breaks the engine's
        # own build cache too, not only ours.
        fresh_line = f"LABEL benchflow.install-nonce={nonce}\n" if fresh else ""
        atomic.write_text(context / "benchflow-install.sh", script)
        atomic.write_text(context / "Dockerfile",
                          f"FROM {task_image}\nUSER root\n{fresh_line}COPY benchflow-install.sh "
                          f"/tmp/benchflow-install.sh\n{_RUN}\n")
    return dataclasses.replace(
        task_spec, name=f"{task_spec.name}-{config.name}", environment_dir=context, dockerfile="Dockerfile",
        cache_key=f"agent-layer:{key}", image=None, base_image_override=None,
        build_timeout_sec=float(config.install.timeout_sec), build_network="host")


async def build_layered(backend: Any, base: Any, spec: SandboxSpec, agent: Any, *, fresh: bool) -> Any:
    """Build the agent's layer on the already built task image ``base``; returns the (unstarted) sandbox.

    Raises:
        AgentError: category ``install_failure``, with the build log's tail as ``log_tail``; its
            message carries the cause from the log (``benchflow.agents.install_errors``).
    """
    from benchflow.agents.install_errors import install_failure_message
    from benchflow.errors import AgentError, BuildError

    layered = backend.create(layer_spec(spec, base.image, agent, fresh=fresh))
    try:
        await layered.build()
    except BuildError as exc:
        message = install_failure_message(agent.config.name, str(exc), exc.log_tail or "", spec.ca_bundle)
        raise AgentError(message, category="install_failure", log_tail=exc.log_tail or str(exc)) from exc
    return layered
