"""The cloud-metadata block of a docker sandbox (:meth:`.docker.DockerSandbox.enforce_metadata_block`).

A container on a bridge (or user-defined) network has a network namespace of its own, and none of
its processes has ``NET_ADMIN`` (:func:`.docker_setup.hardening`; compose services may not ask for
capabilities), so what is put in that namespace from outside holds by construction. A helper
container joins it (network mode ``container:<id>``) with ``NET_ADMIN`` as its only capability,
runs :mod:`.netns_block` with the ``python3`` of the task's own image (the one its Dockerfile built
or its pinned image, never a snapshot an agent has written to) and exits: unreachable routes for
the endpoints, and their neighbour entries on the container's interfaces pinned to a MAC address
nobody has (a socket bound to ``eth0`` would otherwise reach an endpoint that the bridge's host
holds itself, as if it were on the link). Done once per container.

Not enforced, so that the probe decides (:mod:`benchflow.jobs.agent_network`): a container on the
host's network (``BENCHFLOW_DOCKER_PUBLIC_NETWORK=host``: those routes are the host's), one whose
interface is no plain Ethernet one (a rootless podman's ``pasta`` or ``slirp4netns`` tap takes
frames whatever their MAC, an ipvlan has no ARP: :func:`.netns_block.interfaces`), and an image
without ``python3`` (or that is no longer on the engine).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from .. import docker_engine as eng
from ..base import REMEDY, MetadataBlock
from ..docker_build import image_exists, image_tag
from ..docker_engine import call
from ..engine_api import EngineError, container_config, host_config
from ..engine_stream import attach_stream

if TYPE_CHECKING:
    from .sandbox import DockerSandbox

log = logging.getLogger(__name__)

HOW = ("unreachable routes for 169.254.0.0/16, 100.100.100.200 and fd00:ec2::254, and the endpoints' neighbour "
       "entries pinned to a MAC address nobody has, in the container's network namespace, put there by a helper "
       "container with NET_ADMIN, which the agent cannot change (no NET_ADMIN)")
NO_PYTHON = "the task image has no python3 for the helper that puts the block in place"
REMEDY_IMAGE = "give the task image python3 (the docker sandbox then blocks them by construction), or " + REMEDY
REMEDY_HOST = (f"unset {eng.PUBLIC_NETWORK_ENV} (on a bridge network the docker sandbox blocks them by "
               "construction), or " + REMEDY)
HELPER_TIMEOUT_SEC = 60.0
LAUNCH = (f'command -v python3 >/dev/null 2>&1 || {{ echo "error {NO_PYTHON}"; exit 0; }}; '
          'exec python3 -I -c "$0" "$@"')
SCRIPT = Path(__file__).parent.parent / "netns_block.py"


async def enforce(box: DockerSandbox) -> MetadataBlock:
    """The block of ``box``'s current container, put in place the first time it is asked for."""
    container = box._require_container()
    done = box.metadata_block
    if done is not None and done[0] == container:
        return done[1]
    block = await _enforce(box, container)
    box.metadata_block = (container, block)
    return block


async def _enforce(box: DockerSandbox, container: str) -> MetadataBlock:
    info = await call(box.api.inspect_container, container)
    mode = (info.get("HostConfig") or {}).get("NetworkMode") or ""
    if mode == "none":
        return MetadataBlock(True, "no network: the container has only loopback")
    if mode == "host" or mode.startswith("container:"):
        return MetadataBlock(False, "the container shares the host's network, whose routes are not the "
                                    "sandbox's to change", REMEDY_HOST)
    image = await call(_task_image, box)
    if image is None:
        return MetadataBlock(False, "the task's own image is not on the engine for the helper that puts the "
                                    "block in place", REMEDY_IMAGE)
    name = f"bf-block-{container[:12]}-{secrets.token_hex(3)}"
    worker = asyncio.ensure_future(call(_run_helper, box, container, image, name))
    try:
        line = await asyncio.wait_for(asyncio.shield(worker), HELPER_TIMEOUT_SEC)
    except asyncio.TimeoutError:
        await _end(box, name, worker)
        line = f"error the helper container did not finish within {HELPER_TIMEOUT_SEC:g}s"
    except asyncio.CancelledError:
        await asyncio.shield(_end(box, name, worker))
        raise
    except (EngineError, OSError) as exc:
        line = f"error the helper container failed: {str(exc).splitlines()[0] if str(exc) else exc!r}"
    if line.startswith("block "):
        log.debug("%s: metadata block: %s", box.spec.name, line)
        return MetadataBlock(True, HOW)
    why = line.removeprefix("error ") or "the helper container printed nothing"
    return MetadataBlock(False, why[:300], REMEDY_IMAGE if why == NO_PYTHON else REMEDY)


async def _end(box: DockerSandbox, name: str, worker: asyncio.Future) -> None:
    """Remove a helper that is still running: its stream ends, and with it the worker."""
    with contextlib.suppress(EngineError, OSError):
        await call(box.api.remove_container, name, force=True)
    await asyncio.gather(worker, return_exceptions=True)


def _task_image(box: DockerSandbox) -> str | None:
    """The task's own image: its pinned one, else the tag its Dockerfile is built under; None when gone."""
    ref = box.spec.image or image_tag(box.spec)
    return ref if image_exists(box.api, ref) else None


def _run_helper(box: DockerSandbox, container: str, image: str, name: str) -> str:
    """Run the helper in ``container``'s network to its end; its last line of output."""
    api = box.api
    host = host_config(init=False, network_mode=f"container:{container}", nano_cpus=0, memory_bytes=256 << 20,
                       runtime=box.runtime, security_opt=["no-new-privileges"], cap_drop=["ALL"],
                       cap_add=["NET_ADMIN"], pids_limit=32)
    config = container_config(image, command=["sh", "-c", LAUNCH, SCRIPT.read_text(), "--pin"], entrypoint=[],
                              user="0", working_dir="/", environment={}, labels=box._labels(), host_config=host)
    helper = api.create(config, name)["Id"]
    try:
        conn = attach_stream(api, helper)
        try:
            api.start(helper)
            output = b"".join(chunk for _, chunk in conn.frames())
        finally:
            conn.close()
    finally:
        with contextlib.suppress(EngineError, OSError):
            api.remove_container(helper, force=True)
    lines = [line for line in output.decode("utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""
