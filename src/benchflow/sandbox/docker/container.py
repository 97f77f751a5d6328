"""The container of a docker sandbox (:class:`.docker.DockerSandbox`): its network, its name, what
the engine is asked to create, and the states of its life.

Container shape: the task image (built once per content digest, see
:mod:`.docker_build`), ``init=True`` (docker-init as PID 1 reaps zombies and
forwards signals), the task's cpus/memory limits, ``no-new-privileges``, a
small capability set and a pids limit (:func:`.docker_setup.hardening`),
ownership labels (:mod:`.docker_engine`). The container's own main process creates the
sandbox user and ``/logs`` and then idles without needing a ``sleep`` binary
(:mod:`.docker_setup`), so a start costs no exec round trip. ``stop()``
force-removes, so teardown never waits out a stop grace period.

Networks. ``no-network`` gets network mode ``none``: only ``lo``. ``public``
gets the engine's default ``bridge`` network. An engine started with
``--bridge=none`` (the offline engine of ``scripts/docker-engine.sh``) has no
network a container could use other than the host's, and sharing the host's
network stack is not isolation, so there ``public`` runs as ``none``, with a note logged and
kept in ``network_note`` for the trial record; set
``BENCHFLOW_DOCKER_PUBLIC_NETWORK=host`` to opt into the host network instead.
:attr:`.docker.backend.DockerBackend.capabilities` reports exactly this: ``public`` is listed
in ``network_modes`` only when it is really delivered, and in
``network_fallbacks`` (``public -> no-network``) when it is run stricter.
``allowlist`` gets ``none`` too: the trial's egress proxy (:mod:`benchflow.jobs.egress`), reached
through an exec-stream bridge, is its only way out.
"""

from __future__ import annotations

import enum
import os
import re
import secrets
from typing import TYPE_CHECKING

from benchflow.errors import CapabilityError

from .. import ca
from .. import docker_engine as eng
from ..base import SandboxSpec
from ..docker_setup import hardening, main_command
from ..engine_api import container_config, host_config

if TYPE_CHECKING:
    from .pod import DockerPod


class State(enum.Enum):
    """Where a sandbox's container is in its life."""

    NEW = "new"
    CREATED = "created"
    STARTED = "started"
    STOPPED = "stopped"


def container_network(mode: str, url: str | None) -> tuple[str, str | None]:
    """(engine network mode, note when the task gets something stricter than asked)."""
    if mode in ("no-network", "allowlist"):
        return "none", None
    if mode != "public":
        raise CapabilityError(f"sandbox.network_mode={mode!r} is not supported by the docker sandbox; "
                              "use public, allowlist or no-network")
    if eng.facts(url).has_bridge:
        return "bridge", None
    if os.environ.get(eng.PUBLIC_NETWORK_ENV, "").lower() == "host":
        return "host", f"public network is the host's ({eng.PUBLIC_NETWORK_ENV}=host)"
    return "none", ("the engine has no bridge network, so this public-network task runs with no "
                    f"network; set {eng.PUBLIC_NETWORK_ENV}=host to share the host's network")


def container_request(spec: SandboxSpec, image: str, workdir: str, *, network: str, labels: dict[str, str],
                      runtime: str | None, pod: DockerPod | None) -> tuple[dict, str]:
    """(the engine's create config, the container's name) of the main container of ``spec``."""
    options = pod.main_options() if pod is not None else {}
    env = {**(pod.main_environment() if pod is not None else {}), **spec.env}
    if spec.ca_bundle is not None:
        env.update(ca.ca_env())
    binds = {str(host): inside for inside, host in spec.mounts.items()}
    host = host_config(init=True, network_mode=network, nano_cpus=int(spec.cpus * 1e9),
                       memory_bytes=int(spec.memory_mb) << 20, binds=binds, runtime=runtime,
                       **options, **hardening())
    name = f"bf-{slug(spec.name)}-{secrets.token_hex(4)}"
    config = container_config(
        image, entrypoint=[],
        command=main_command(spec.sandbox_user, workdir),
        stdin_open=True, user="0", working_dir=workdir, environment=env, labels=labels,
        host_config=host)
    return config, name


def slug(name: str) -> str:
    """``name`` as a part of an engine name (a container's, a snapshot's tag)."""
    return (re.sub(r"[^a-zA-Z0-9_.-]+", "-", name).strip("-.") or "task")[:40]
