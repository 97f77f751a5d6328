"""What a trial asks of a sandbox (:class:`SandboxSpec`) and what a backend can give (:class:`Capabilities`):
the two halves a plan matches before anything starts (:mod:`.fit`). :mod:`.base` holds the contract that
uses them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

NetworkMode = Literal["no-network", "public", "allowlist"]


class Capabilities(BaseModel):
    """What a backend can do, as data, so a plan can refuse a task before anything starts."""

    model_config = ConfigDict(frozen=True)

    network_modes: frozenset[str] = frozenset({"no-network", "public"})
    """Network modes it enforces (``no-network``, ``public``, ``allowlist``)."""
    network_fallbacks: Mapping[str, str] = {}
    """Modes it accepts but runs stricter, requested -> delivered (e.g. ``public`` ->
    ``no-network`` on a Docker engine without a bridge network). A plan may run such a
    task with a warning instead of refusing it."""
    fallback_note: str | None = None
    """Why ``network_fallbacks`` hold on this machine and how to lift them, one line naming what is
    missing and its package; the run card (once per run) and ``bench doctor`` show it."""
    snapshots: bool = False
    """Whether ``snapshot()``/``restore()`` work."""
    retained_snapshots: bool = False
    """Whether a snapshot can outlive its sandbox (``snapshot(retain=True)``, ``bench branch
    --retain-snapshots`` and ``--from-checkpoint``)."""
    start_from_snapshot: bool = False
    """Whether ``restore(ref)`` on a sandbox built but not started starts it straight from the
    snapshot (an isolated branch child then starts once, not twice)."""
    gpus: bool = False
    """Whether it can give a task GPUs."""
    multi_service: bool = False
    """Whether it runs docker-compose multi-service environments."""
    build_from_dockerfile: bool = True
    """Whether it builds environment/Dockerfile (the local backend honours a subset)."""
    resource_limits: bool = True
    """Whether cpus/memory_mb limits are enforced."""
    host_mounts: bool = False
    """Whether ``SandboxSpec.mounts`` (host folders bind-mounted into the sandbox) work: the
    host is the machine the sandbox runs on (not a remote engine's or a cloud's)."""
    image_layers: bool = False
    """Whether an agent's install can be baked into a cached image layer: ``build()`` of a spec
    whose Dockerfile starts ``FROM`` the task sandbox's built ``image``."""
    keep: bool = False
    """Whether a sandbox can outlive its run (``--keep-sandbox``, ``bench sandbox
    create|attach|release``): its sandboxes have ``keep()``, the backend ``create_kept``,
    ``attach`` and ``release``."""
    exec_writes_persist: bool = False
    """Whether a file an exec writes anywhere (e.g. a new ``/verifier``) is there for the next exec:
    the sandbox has one root file system of its own. The verifier fence then brings the verifier's
    folder in its own exec instead of a separate upload."""

    def network_for(self, mode: str) -> str | None:
        """The network mode a task asking for ``mode`` gets here; None when it is refused."""
        if mode in self.network_modes:
            return mode
        return self.network_fallbacks.get(mode)


@dataclass(frozen=True)
class SandboxSpec:
    """Everything a backend needs to build and start one sandbox for one trial."""

    name: str
    """Sanitised name for the task (image name base, container name prefix)."""
    environment_dir: Path | None
    """Build context: the task's ``environment/`` folder (None with a prebuilt image)."""
    cache_key: str
    """Content digest the image tag is derived from (a changed task rebuilds)."""
    dockerfile: str = "Dockerfile"
    image: str | None = None
    """Prebuilt image to use instead of building (task ``sandbox.docker_image``)."""
    cpus: float = 1.0
    memory_mb: int = 2048
    gpus: int = 0
    """GPUs the task asks for (task ``sandbox.gpus``); the run card refuses them on a backend without ``gpus``."""
    gpu_types: tuple[str, ...] = ()
    """Acceptable GPU types, first preferred (task ``sandbox.gpu_types``)."""
    network_mode: NetworkMode = "public"
    build_timeout_sec: float = 600.0
    setup_timeout_sec: float = 120.0
    """How long the setup inside a started sandbox (its user, ``/logs``) may take (``--sandbox-setup-timeout``)."""
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    """Task ``sandbox.workdir``; else the image WORKDIR; ``/`` becomes ``/root``."""
    base_image_override: str | None = None
    sandbox_user: str | None = "agent"
    """Non-root user created at start for the agent (None: the agent runs as root)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Ownership labels (job, trial, owning pid) written on every resource created."""
    build_network: Literal["none", "host"] = "host"
    ca_bundle: Path | None = None
    """Host CA bundle to trust inside builds and the sandbox (TLS-intercepting proxies)."""
    mounts: Mapping[str, Path] = field(default_factory=dict)
    """Host folders bind-mounted read-only into the sandbox, sandbox path -> host path (the model
    bridge's per-trial socket folder). Backends that cannot mount host folders refuse a spec that has any."""
    compose_file: Path | None = None
    """The task's ``environment/docker-compose.yaml``: its services run beside ``main`` (backends with
    ``Capabilities.multi_service``; the others refuse a spec that has one with more than ``main``)."""
    compose_variables: dict[str, str] = field(default_factory=dict)
    """Values for the compose file's ``${NAME}`` (the host variables ``--allow-task-env`` allowed)."""
    bundled_skills: bool = True
    """False (a no-skill run): the build leaves the task's ``environment/skills/`` out of the image
    (the context and the Dockerfile's copies of it; :mod:`.bundled_skills`)."""
