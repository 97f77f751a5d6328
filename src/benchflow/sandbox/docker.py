"""The sandbox of the ``docker`` and ``remote-docker`` backends (:mod:`.docker_backend`), on the
Docker Engine API.

Every call goes to the Engine API (:mod:`.engine_api`; no ``docker`` CLI process per
call); blocking calls run in a worker pool. ``remote-docker`` is
the same class pointed at ``BENCHFLOW_REMOTE_DOCKER_HOST``.

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
:attr:`.docker_backend.DockerBackend.capabilities` reports exactly this: ``public`` is listed
in ``network_modes`` only when it is really delivered, and in
``network_fallbacks`` (``public -> no-network``) when it is run stricter.
``allowlist`` gets ``none`` too: the trial's egress proxy (:mod:`benchflow.jobs.egress`), reached
through an exec-stream bridge, is its only way out.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import re
import secrets
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from benchflow.errors import (
    CapabilityError,
    InfraError,
    SandboxError,
)

from . import ca
from . import docker_engine as eng
from .base import DEFAULT_OUTPUT_CAP_BYTES, Capabilities, ExecResult, SandboxSpec
from .copyout import CopyReport, copy_out_tar
from .docker_build import build_image
from .docker_engine import call
from .docker_exec import run as run_exec
from .docker_leftovers import KEPT_PREFIX, RETAINED
from .docker_setup import hardening, main_command, parse_ready, resolve_workdir
from .docker_stream import DockerProcess, open_process
from .engine_api import (
    EngineError,
    ImageNotFound,
    NotFound,
    container_config,
    host_config,
)
from .engine_stream import attach_stream
from .tarstream import pack_many, pack_members

if TYPE_CHECKING:
    from .docker_pod import DockerPod

log = logging.getLogger(__name__)

SNAPSHOT_REPO = "benchflow/snapshot"
SETUP_TIMEOUT_SEC = 120
SPARES_AHEAD = 2
"""Containers a sandbox starts ahead from one snapshot at most (:meth:`DockerSandbox.prepare_restore`)."""


class State(enum.Enum):
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


class DockerSandbox:
    """One container for one trial. See :class:`benchflow.sandbox.base.Sandbox`."""

    def __init__(self, spec: SandboxSpec, *, url: str | None, capabilities: Capabilities,
                 backend: str = "docker", detached: bool = False, runtime: str | None = None) -> None:
        self.spec = spec
        self.runtime = runtime
        """The engine's OCI runtime for this container (e.g. ``runsc``); None: the engine's default."""
        self.capabilities = capabilities
        self.backend = backend
        self.url = url
        self.detached = detached
        """True for containers made to outlive this process (``bench sandbox create``): no owner pid."""
        self.image: str | None = spec.image
        self.build_log = ""
        """The engine's build output of the last ``build()`` (empty when cached or prebuilt)."""
        self.network_note: str | None = None
        self.retain_snapshots = False
        self._container: str | None = None
        self._workdir = "/root"
        self._state = State.NEW
        self._snapshots: list[str] = []
        self._spares: list[tuple[str, DockerSandbox, asyncio.Future]] = []
        """Containers started ahead from a snapshot (:meth:`prepare_restore`): (ref, its sandbox, its start)."""
        self._removals: list[asyncio.Future] = []
        """Replaced containers being removed in the background (``stop()`` waits for them)."""
        self._stop_task: asyncio.Future | None = None
        self._kept = False
        self.pod: DockerPod | None = None
        """The task's other compose services, pod-style in this container's network (:mod:`.docker_pod`)."""

    @property
    def api(self):
        return eng.client(self.url)

    @property
    def sandbox_id(self) -> str | None:
        return self._container

    @property
    def workdir(self) -> str:
        return self._workdir

    def _labels(self, kind: str = "sandbox") -> dict[str, str]:
        extra = {eng.TASK: self.spec.name, **self.spec.labels, eng.BACKEND: self.backend}
        labels = eng.owner_labels(extra, kind=kind)
        if self.detached:
            for key in (eng.PID, eng.PID_START, eng.HOST):
                labels.pop(key, None)
        return labels

    async def build(self) -> None:
        await self._build_pod()
        if self.spec.image:
            self.image = self.spec.image
            await call(self._ensure_pulled, self.spec.image)
            return
        outcome = await build_image(self.api, self.spec, self._labels(kind="image") | {
            eng.CACHE_KEY: self.spec.cache_key})
        self.image, self.build_log = outcome.tag, outcome.log

    async def _build_pod(self) -> None:
        if self.pod is None and self.spec.compose_file is not None:
            from . import docker_pod  # only a task with compose services loads it

            self.pod = docker_pod.DockerPod(docker_pod.load(self.spec.compose_file, self.spec.compose_variables), self)
        if self.pod is not None:
            await self.pod.build()

    def service(self, name: str):
        """The compose service ``name`` as a sandbox view (``main`` is this sandbox)."""
        from .compose_file import MAIN

        if name == MAIN:
            return self
        if self.pod is None:
            raise SandboxError(f"{self.spec.name}: no service {name!r}: the task has no docker-compose services")
        return self.pod.service(name)

    def _ensure_pulled(self, image: str) -> None:
        try:
            self.api.inspect_image(image)
        except ImageNotFound:
            try:
                self.api.pull(image)
            except EngineError as exc:
                raise SandboxError(f"sandbox.docker_image {image!r}: not on the engine and the pull "
                                   f"failed ({exc.explanation or exc}); load or build it first") from exc
            from .docker_cache import record_pull

            record_pull(self.url, image)

    async def create(self) -> str:
        """Build if needed and create the container without starting it; returns its id."""
        if self._state is not State.NEW:
            return self._container or ""
        if self.spec.mounts and not self.capabilities.host_mounts:
            raise CapabilityError(f"{self.spec.name}: --sandbox {self.backend} cannot mount host folders "
                                  f"({', '.join(self.spec.mounts)}): the engine runs on another host")
        if self.image is None:
            await self.build()
        await self._build_pod()
        network, self.network_note = container_network(self.spec.network_mode, self.url)
        if network != "none" and self.capabilities.network_for(self.spec.network_mode) == "no-network":
            network, self.network_note = "none", (f"--sandbox {self.backend} gives a sandbox no network, so this "
                                                  f"{self.spec.network_mode}-network task runs with none")
        if self.network_note:
            log.info("%s: %s", self.spec.name, self.network_note)
        worker = asyncio.ensure_future(call(self._create_blocking, network))
        try:
            self._container = await asyncio.shield(worker)
        except EngineError as exc:
            raise SandboxError(f"{self.spec.name}: the container could not be created: "
                               f"{exc.explanation or exc}") from exc
        except asyncio.CancelledError:
            # the engine may still create it: learn its id so stop() removes it, even when cancelled again
            while not worker.done():
                try:
                    await asyncio.wait([worker])
                except asyncio.CancelledError:
                    continue
            if not worker.cancelled() and worker.exception() is None:
                self._container, self._state = worker.result(), State.CREATED
            raise
        self._state = State.CREATED
        return self._container

    def _create_blocking(self, network: str) -> str:
        api = self.api
        image_config = api.inspect_image(self.image).get("Config") or {}
        self._workdir = resolve_workdir(self.spec.workdir, image_config.get("WorkingDir"))
        pod = self.pod.main_options() if self.pod is not None else {}
        env = {**(self.pod.main_environment() if self.pod is not None else {}), **self.spec.env}
        if self.spec.ca_bundle is not None:
            env.update(ca.ca_env())
        binds = {str(host): inside for inside, host in self.spec.mounts.items()}
        host = host_config(init=True, network_mode=network, nano_cpus=int(self.spec.cpus * 1e9),
                           memory_bytes=int(self.spec.memory_mb) << 20, binds=binds, runtime=self.runtime,
                           **pod, **hardening())
        name = f"bf-{_slug(self.spec.name)}-{secrets.token_hex(4)}"
        config = container_config(
            self.image, entrypoint=[],
            command=main_command(self.spec.sandbox_user, self._workdir),
            stdin_open=True, user="0", working_dir=self._workdir, environment=env, labels=self._labels(),
            host_config=host)
        return api.create(config, name)["Id"]

    async def start(self) -> None:
        if self._state is State.STARTED:
            return
        if self._state is State.STOPPED:
            raise SandboxError(f"{self.spec.name}: this sandbox was stopped; create a new one")
        box: list = []
        try:
            await self.create()  # inside: a cancelled create has learnt its container's id, and it goes
            if self.spec.image and self.spec.ca_bundle is not None:
                bundle = ca.read_bundle(self.spec.ca_bundle)
                await call(self.api.put_archive, self._container, "/",
                           pack_members([(ca.CA_PATH, bundle, 0o644)]))
            worker = asyncio.ensure_future(call(self._start_blocking, box))
            try:
                status, output = await asyncio.wait_for(asyncio.shield(worker), SETUP_TIMEOUT_SEC)
            except asyncio.TimeoutError:
                raise SandboxError(f"{self.spec.name}: sandbox setup did not finish within "
                                   f"{SETUP_TIMEOUT_SEC}s") from None
            except EngineError as exc:
                raise SandboxError(f"{self.spec.name}: the container did not start: "
                                   f"{exc.explanation or exc}") from exc
            if status != 0:
                raise SandboxError(f"{self.spec.name}: sandbox setup failed (rc={status}): "
                                   f"{output.strip()[-500:]}")
            if self.pod is not None:
                await self.pod.start(self._container)
        except BaseException:
            for conn in box:
                conn.wake()
                conn.close()
            await self.stop()
            raise
        self._state = State.STARTED

    def _start_blocking(self, box: list) -> tuple[int, str]:
        """Attach, start, and read the main process's output up to the setup marker."""
        conn = attach_stream(self.api, self._container)
        box.append(conn)
        try:
            self.api.start(self._container)
            seen = ""
            for _, chunk in conn.frames():
                seen += chunk.decode("utf-8", errors="replace")
                ready = parse_ready(seen)
                if ready is not None:
                    return ready
        finally:
            conn.close()
        state = self.api.inspect_container(self._container)["State"]
        return int(state.get("ExitCode") or 1), seen or f"the container exited ({state.get('Status')})"

    def _require_container(self) -> str:
        if self._container is None or self._state is State.STOPPED:
            raise InfraError(f"{self.spec.name}: the sandbox is not running (start it first)")
        return self._container

    async def exec(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, timeout: float | None = None, stdin: bytes | None = None,
                   output_cap: int = DEFAULT_OUTPUT_CAP_BYTES) -> ExecResult:
        return await run_exec(self.api, self._require_container(), cmd, user=user, env=env, cwd=cwd,
                              timeout=timeout, stdin=stdin, output_cap=output_cap)

    async def exec_stream(self, cmd: list[str], *, user: str | None = None,
                          env: Mapping[str, str] | None = None, cwd: str | None = None) -> DockerProcess:
        return await open_process(self.api, self._require_container(), cmd, user=user, env=env, cwd=cwd)

    async def put(self, local: Path, remote: str) -> None:
        await self.put_many([(local, remote)])

    async def put_many(self, items: list[tuple[Path, str]]) -> None:
        """Several :meth:`put` calls in one engine round trip (one archive)."""
        for local, _ in items:
            if not Path(local).exists() and not Path(local).is_symlink():
                raise FileNotFoundError(f"put: {local} does not exist")
        container = self._require_container()
        archive = await call(pack_many, [(Path(local), remote) for local, remote in items])
        try:
            ok = await call(self.api.put_archive, container, "/", archive)
        finally:
            archive.close()
        if not ok:
            what = ", ".join(f"{local} -> {remote}" for local, remote in items)
            raise InfraError(f"put {what}: the engine refused the archive")

    async def get(self, remote: str, local: Path) -> CopyReport:
        container = self._require_container()

        def fetch() -> CopyReport:
            try:
                stream, stat = self.api.get_archive(container, remote, chunk_size=1 << 20)
            except NotFound as exc:
                raise FileNotFoundError(f"get: {remote} does not exist in the sandbox") from exc
            return copy_out_tar(stream, stat["name"], Path(local))

        return await call(fetch)

    async def snapshot(self, *, retain: bool = False) -> str:
        """``docker commit`` of the container, labelled with the owner (``bench cache`` lists it);
        removed by ``stop()`` unless ``retain`` (then labelled ``benchflow.retained``)."""
        container = self._require_container()
        tag = f"{_slug(self.spec.name)}-{secrets.token_hex(6)}"
        labels = self._labels(kind="snapshot") | ({RETAINED: "true"} if retain else {})
        await call(self.api.commit, container, repository=SNAPSHOT_REPO, tag=tag,
                   conf={"Labels": labels})
        ref = f"{SNAPSHOT_REPO}:{tag}"
        if not retain:
            self._snapshots.append(ref)
        return ref

    async def restore(self, ref: str) -> None:
        """Replace the container with one started from snapshot ``ref``: the spare
        :meth:`prepare_restore` started ahead when it is of ``ref``, else a new one. The replaced
        container is removed in the background (``stop()`` waits for it; its owner labels let
        cleanup find it after a crash). A sandbox built but not started yet starts from ``ref``."""
        if self._state is State.NEW:
            self.image = ref
            await self.start()
            return
        old = self._require_container()
        if self.pod is not None:  # the pod's siblings join the new container's network: remove first
            await call(self._remove_container, old)
        else:
            self._removals.append(asyncio.ensure_future(call(self._remove_container, old)))
        self._container, self._state = None, State.NEW
        if await self._adopt_spare(ref):
            return
        self.image = ref
        await self.start()

    async def prepare_restore(self, ref: str, count: int = 1) -> None:
        """Have ``count`` (at most :data:`SPARES_AHEAD`) spare containers started from snapshot ``ref``
        in the background, so that the next restores of ``ref`` only swap containers (a branch's
        sequential children). No-op with a pod of services."""
        if self.pod is not None or self._state is not State.STARTED:
            return
        have = sum(1 for r, _, _ in self._spares if r == ref)
        for _ in range(min(count, SPARES_AHEAD) - have):
            spare = DockerSandbox(self.spec, url=self.url, capabilities=self.capabilities, backend=self.backend,
                                  detached=self.detached, runtime=self.runtime)
            spare.image = ref
            self._spares.append((ref, spare, asyncio.ensure_future(spare.start())))

    async def _adopt_spare(self, ref: str) -> bool:
        """Make the oldest spare of ``ref`` this sandbox's container; False when there is none (or it failed)."""
        mine = next((entry for entry in self._spares if entry[0] == ref), None)
        if mine is None:
            return False
        self._spares.remove(mine)
        _, spare, starting = mine
        try:
            await asyncio.shield(starting)
        except Exception as exc:  # noqa: BLE001 - the caller starts a new container instead
            log.debug("%s: the spare container did not start: %s", self.spec.name, exc)
            await spare.stop()
            return False
        self._container, self._workdir, self._state = spare._container, spare._workdir, State.STARTED
        self.network_note = spare.network_note
        return True

    async def keep(self) -> dict[str, object]:
        """Keep the container after this run (``--keep-sandbox``): renamed so cleanup leaves it.

        Returns the fields of ``kept-sandbox.json`` except ``trial`` and ``created_at``;
        ``stop()`` becomes a no-op.
        """
        container = self._require_container()
        await self._settle()
        await call(self.api.rename, container, f"{KEPT_PREFIX}{container[:12]}")
        self._kept = True
        return {"schema_version": 1, "backend": self.backend, "sandbox_id": container,
                "docker_host": self.url}

    async def stop(self) -> None:
        """Force-remove the container (and snapshots unless retained). Idempotent, never raises,
        finishes even when the caller is cancelled."""
        if self._kept:
            return
        if self._stop_task is None:
            self._stop_task = asyncio.ensure_future(self._stop_all())
        try:
            await asyncio.shield(self._stop_task)
        except asyncio.CancelledError:
            await asyncio.gather(asyncio.shield(self._stop_task), return_exceptions=True)
            raise
        except Exception:  # noqa: BLE001 - already logged in _stop_blocking
            pass

    async def discard(self) -> None:
        """:meth:`stop` for a sandbox nothing needs afterwards (a finished trial's), without waiting
        for the engine: the force-remove is sent and the removal finishes on its own, even after this
        process exits (a failure is logged; the owner labels let ``bench sandbox cleanup`` find the
        container). With more to remove (a pod, spares, snapshots, replaced containers): :meth:`stop`."""
        if self._stop_task is None and not self._kept and self._container is not None and self.pod is None \
                and not (self._spares or self._removals or (self._snapshots and not self.retain_snapshots)):
            self._stop_task = asyncio.ensure_future(call(self._discard_blocking, self._container))
        await self.stop()

    def _discard_blocking(self, container: str) -> None:
        self._state = State.STOPPED
        try:
            answer = self.api.remove_container_unawaited(container)
        except Exception:  # noqa: BLE001 - the engine did not take the request: remove and wait
            self._remove_container(container)
            return
        threading.Thread(target=_removal_answer, args=(answer, container), daemon=True).start()

    async def _stop_all(self) -> None:
        await self._settle()
        await call(self._stop_blocking)

    async def _settle(self) -> None:
        """Remove the spare and wait for the replaced containers' removals."""
        spares, self._spares = self._spares, []

        async def drop(spare: DockerSandbox, starting: asyncio.Future) -> None:
            await asyncio.gather(starting, return_exceptions=True)
            await spare.stop()

        await asyncio.gather(*(drop(spare, starting) for _, spare, starting in spares))
        await asyncio.gather(*self._removals, return_exceptions=True)

    def _stop_blocking(self) -> None:
        self._state = State.STOPPED
        if self._container is not None:
            self._remove_container(self._container)
        if not self.retain_snapshots:
            for ref in self._snapshots:
                try:
                    self.api.remove_image(ref, force=True)
                except Exception as exc:  # noqa: BLE001
                    log.debug("removing snapshot %s: %s", ref, exc)

    def _remove_container(self, container: str) -> None:
        if self.pod is not None:  # the siblings live in this container's network: they go first
            self.pod.remove()
        try:
            self.api.remove_container(container, force=True, v=True)
        except NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - stop never raises; cleanup catches leftovers
            log.warning("could not remove container %s: %s (bench sandbox cleanup removes it)",
                        container[:12], exc)


def _removal_answer(answer, container: str) -> None:
    """Read a :meth:`DockerSandbox.discard`'s answer (in a daemon thread: the process need not wait)."""
    try:
        answer()
    except Exception as exc:  # noqa: BLE001 - cleanup catches leftovers
        log.warning("could not remove container %s: %s (bench sandbox cleanup removes it)", container[:12], exc)


def _slug(name: str) -> str:
    return (re.sub(r"[^a-zA-Z0-9_.-]+", "-", name).strip("-.") or "task")[:40]
