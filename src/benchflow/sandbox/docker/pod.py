"""A multi-service sandbox on a Docker engine: the task's compose services as one pod.

Engines here run without a bridge network, and a private-range bridge is not something to rely
on, so the services share **one network namespace**, pod-style: ``main`` (the agent's container,
made by :class:`.docker.DockerSandbox`) owns it and every sibling joins it with network mode
``container:<main>``. Service names resolve to loopback through ``/etc/hosts`` entries written into
``main`` at creation (siblings share that file), so ``db:5432`` reaches the ``db`` service. Two
services on one port would clash, so the compose file is refused when its ports say so
(:mod:`.compose_file`), and a sibling that exits while the pod starts is reported with its log.
``no-network`` keeps the whole group on loopback: nothing of it can reach any other network.

Siblings get the sandbox's hardening (no-new-privileges, the small capability set, the pids
limit), its cpu/memory limits, and the owner labels plus ``benchflow.pod`` / ``benchflow.service``,
so the group is removed as one unit: by :meth:`DockerPod.remove` when the sandbox stops, and by
:func:`.docker.leftovers.remove` (any member's id takes the whole pod, with its named volumes)
after a ``kill -9``. They start in ``depends_on`` order; each waits for its dependencies'
conditions (started, healthy by the engine's health check, or exited 0), and the sandbox is ready
only once ``main``'s own conditions hold.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchflow.errors import InfraError, SandboxError

from .. import compose_file
from .. import docker_engine as eng
from ..base import DEFAULT_OUTPUT_CAP_BYTES, ExecResult
from ..compose_file import MAIN, ComposeFile, Service
from ..docker_engine import call
from ..docker_setup import hardening
from .leftovers import POD

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .sandbox import DockerSandbox

SERVICE = "benchflow.service"
"""Label on a pod's containers: the compose service it runs."""
STARTUP_TIMEOUT_SEC = 300.0
"""The longest a pod waits for one service's condition (started, healthy, exited 0)."""


def load(compose: Path | None, variables: Mapping[str, str] | None = None) -> ComposeFile | None:
    """The task's compose file, read and checked; None when the task has none."""
    return compose_file.load(compose, variables) if compose is not None else None


class DockerPod:
    """The sibling services of one :class:`.docker.DockerSandbox` (see the module docstring)."""

    def __init__(self, compose: ComposeFile, box: DockerSandbox) -> None:
        self.compose = compose
        self.box = box
        self.id = secrets.token_hex(6)
        self.images: dict[str, str] = {}
        self.containers: dict[str, str] = {}
        """Service -> container id, once created."""
        self.volumes: dict[str, str] = {}
        """Volume name in the file -> the engine's volume name."""
        base = re.sub(r"[^a-zA-Z0-9_.-]+", "-", box.spec.name).strip("-.")[:30] or "task"
        self.prefix = f"bf-{base}-{self.id}"

    @property
    def api(self):
        return self.box.api

    def labels(self, service: str | None = None, kind: str = "sandbox") -> dict[str, str]:
        out = self.box._labels(kind=kind) | {POD: self.id}
        return out | ({SERVICE: service} if service else {})

    async def build(self) -> None:
        """Build or find every sibling's image (idempotent)."""
        from ..docker_build import build_image

        for svc in self.compose.siblings:
            if svc.name in self.images:
                continue
            if svc.build_context is None:
                await call(self.box._ensure_pulled, svc.image)
                self.images[svc.name] = svc.image
                continue
            key = hashlib.sha256(f"{self.box.spec.cache_key}\0{svc.name}\0{svc.build_context}\0{svc.dockerfile}"
                                 .encode()).hexdigest()
            spec = dataclasses.replace(self.box.spec, name=f"{self.box.spec.name}-{svc.name}",
                                       environment_dir=svc.build_context, dockerfile=svc.dockerfile, image=None,
                                       cache_key=key, base_image_override=None, compose_file=None)
            outcome = await build_image(self.api, spec, self.labels(kind="image") | {eng.CACHE_KEY: key})
            self.images[svc.name] = outcome.tag

    def main_options(self) -> dict[str, Any]:
        """``create_host_config`` keywords for ``main``: the service names in its hosts file and its
        volumes. Creates the pod's named volumes first (blocking)."""
        for svc in self.compose.services.values():
            for vol in svc.volumes:
                if vol.kind == "named" and vol.source not in self.volumes:
                    name = f"{self.prefix}-{vol.source}"
                    self.api.create_volume(name, labels=self.labels(kind="volume"))
                    self.volumes[vol.source] = name
        hosts = {name: "127.0.0.1" for name in self.compose.services}
        return {"extra_hosts": hosts, **self._mounts(self.compose.services[MAIN])}

    def main_environment(self) -> dict[str, str]:
        return dict(self.compose.services[MAIN].environment)

    def _mounts(self, svc: Service) -> dict[str, Any]:
        from docker.types import Mount

        mounts = []
        for vol in svc.volumes:
            if vol.kind == "tmpfs":
                mounts.append(Mount(vol.target, None, type="tmpfs"))
            else:
                source = self.volumes.get(vol.source) if vol.kind == "named" else None
                mounts.append(Mount(vol.target, source, type="volume", read_only=vol.read_only,
                                    labels=self.labels(kind="volume") if source is None else None))
        return {"mounts": mounts} if mounts else {}

    async def start(self, main: str) -> None:
        """Start the siblings in ``main``'s network namespace, in order, each once its dependencies'
        conditions hold; return once ``main``'s own hold.

        Raises:
            SandboxError: a service did not start, became unhealthy, exited, or took too long.
        """
        for svc in self.compose.siblings:
            await self._wait_for(svc.depends_on, f"service {svc.name!r}")
            self.containers[svc.name] = await _surely(self._create, svc, main)
            await _surely(self.api.start, self.containers[svc.name])
        await self._wait_for(self.compose.services[MAIN].depends_on, "the agent's service 'main'")
        await call(self._check_alive)

    def _create(self, svc: Service, main: str) -> str:
        host_config = self.api.create_host_config(
            init=True, network_mode=f"container:{main}", nano_cpus=int(self.box.spec.cpus * 1e9),
            mem_limit=f"{int(self.box.spec.memory_mb)}m", **self._mounts(svc), **hardening())
        created = self.api.create_container(
            self.images[svc.name], command=svc.command, entrypoint=svc.entrypoint, environment=svc.environment,
            working_dir=svc.working_dir, user=svc.user, labels=self.labels(svc.name),
            name=f"{self.prefix}-{svc.name}", healthcheck=svc.healthcheck, host_config=host_config)
        return created["Id"]

    async def _wait_for(self, conditions: Mapping[str, str], waiter: str) -> None:
        for name, condition in conditions.items():
            deadline = time.monotonic() + STARTUP_TIMEOUT_SEC
            while True:
                done = await call(self._condition_met, name, condition, waiter)
                if done:
                    break
                if time.monotonic() > deadline:
                    raise SandboxError(f"{self.compose.path}: {waiter} waited {STARTUP_TIMEOUT_SEC:g}s for "
                                       f"service {name!r} to be {_WORDS[condition]}")
                await asyncio.sleep(0.2)

    def _condition_met(self, name: str, condition: str, waiter: str) -> bool:
        info = self.api.inspect_container(self.containers[name])
        state = info.get("State") or {}
        status, code = state.get("Status"), state.get("ExitCode")
        if condition == "service_completed_successfully":
            if status in ("exited", "dead"):
                if code == 0:
                    return True
                raise self._failed(name, f"exited with status {code}", f"{waiter} waits for it")
            return False
        if status in ("exited", "dead"):
            raise self._failed(name, f"exited with status {code}", f"{waiter} waits for it")
        if condition == "service_started":
            return status == "running"
        health = state.get("Health")
        if health is None:
            raise SandboxError(f"{self.compose.path}: {waiter} waits for service {name!r} to be healthy, but it "
                               f"has no healthcheck; add services.{name}.healthcheck")
        if health.get("Status") == "unhealthy":
            last = (health.get("Log") or [{}])[-1].get("Output", "").strip()[-300:]
            raise self._failed(name, f"is unhealthy (last check: {last or 'no output'})",
                               f"{waiter} waits for it")
        return health.get("Status") == "healthy"

    def _check_alive(self) -> None:
        """Refuse a pod whose sibling already exited with an error (e.g. its port was taken)."""
        for name, container in self.containers.items():
            state = self.api.inspect_container(container).get("State") or {}
            if state.get("Status") in ("exited", "dead") and state.get("ExitCode") != 0:
                raise self._failed(name, f"exited with status {state.get('ExitCode')}", "after the pod started")

    def _failed(self, name: str, what: str, waiter: str) -> SandboxError:
        try:
            tail = self.api.logs(self.containers[name], tail=20).decode("utf-8", "replace").strip()
        except Exception:  # noqa: BLE001 - the log is a courtesy
            tail = ""
        clash = " (services share one network namespace: is its port taken by another service?)" \
            if "in use" in tail.lower() else ""
        note = f"; its log ends: {tail[-500:]}" if tail else ""
        return SandboxError(f"{self.compose.path}: service {name!r} {what} ({waiter}){clash}{note}")

    def remove(self) -> None:
        """Force-remove every sibling and the pod's volumes (blocking; never raises): what is
        labelled with the pod's id, so a sibling whose creation was cut short goes too."""
        from .leftovers import remove_pod

        try:
            stayed = remove_pod(self.api, self.id)
        except Exception as exc:  # noqa: BLE001 - stop never raises; cleanup catches leftovers
            stayed = str(exc)
        if stayed:
            log.warning("pod %s: %s (bench sandbox cleanup removes it)", self.id, stayed)
        self.containers.clear()
        self.volumes.clear()

    def service(self, name: str) -> ServiceSandbox:
        """The running sibling ``name`` as a sandbox view (exec, exec_stream, put, get).

        Raises:
            SandboxError: the compose file has no such service.
        """
        if name not in self.containers:
            known = ", ".join(sorted(self.compose.services))
            raise SandboxError(f"{self.compose.path}: no service {name!r} runs in this sandbox (services: {known})")
        return ServiceSandbox(self.box, name, self.containers[name])


async def _surely(fn, *args):
    """``fn(*args)`` in the engine's worker pool, finished even when the caller is cancelled (so
    what it creates is labelled and found by :meth:`DockerPod.remove`)."""
    worker = asyncio.ensure_future(call(fn, *args))
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        await asyncio.gather(worker, return_exceptions=True)
        raise


_WORDS = {"service_started": "started", "service_healthy": "healthy",
          "service_completed_successfully": "completed successfully"}


class ServiceSandbox:
    """A sibling service of a pod, used like the sandbox itself for commands and files (the
    verifier of a task with ``verifier.service``). It lives and dies with its sandbox."""

    def __init__(self, box: DockerSandbox, service: str, container: str) -> None:
        self.box = box
        self.service_name = service
        self.container = container
        self.spec = box.spec
        self.capabilities = box.capabilities

    @property
    def sandbox_id(self) -> str:
        return self.container

    @property
    def workdir(self) -> str:
        return self.box.workdir

    def _live(self) -> str:
        self.box._require_container()
        return self.container

    async def exec(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, timeout: float | None = None, stdin: bytes | None = None,
                   output_cap: int = DEFAULT_OUTPUT_CAP_BYTES) -> ExecResult:
        from ..docker_exec import run

        return await run(self.box.api, self._live(), cmd, user=user, env=env, cwd=cwd, timeout=timeout,
                         stdin=stdin, output_cap=output_cap)

    async def exec_stream(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                          cwd: str | None = None):
        from .stream import open_process

        return await open_process(self.box.api, self._live(), cmd, user=user, env=env, cwd=cwd)

    async def put(self, local: Path, remote: str) -> None:
        from ..tarstream import pack

        local = Path(local)
        if not local.exists() and not local.is_symlink():
            raise FileNotFoundError(f"put: {local} does not exist")
        archive = await call(pack, local, remote)
        try:
            ok = await call(self.box.api.put_archive, self._live(), "/", archive)
        finally:
            archive.close()
        if not ok:
            raise InfraError(f"put {local} -> {remote} ({self.service_name}): the engine refused the archive")

    async def get(self, remote: str, local: Path):
        from ..engine_api import NotFound

        from ..copyout import copy_out_tar

        container = self._live()

        def fetch():
            try:
                stream, stat = self.box.api.get_archive(container, remote, chunk_size=1 << 20)
            except NotFound as exc:
                raise FileNotFoundError(f"get: {remote} does not exist in service {self.service_name!r}") from exc
            return copy_out_tar(stream, stat["name"], Path(local))

        return await call(fetch)
