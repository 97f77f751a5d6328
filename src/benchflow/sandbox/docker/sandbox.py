"""The sandbox of the ``docker`` and ``remote-docker`` backends (:mod:`.docker.backend`), on the
Docker Engine API.

Every call goes to the Engine API (:mod:`.engine_api`; no ``docker`` CLI process per
call); blocking calls run in a worker pool. ``remote-docker`` is
the same class pointed at ``BENCHFLOW_REMOTE_DOCKER_HOST``.

This module builds (or pulls) the image, creates and starts the container, and runs commands
and copies files in it. The container's shape and network are :mod:`.docker.container`'s;
snapshots and restores :mod:`.docker.snapshots`'; keeping, stopping and discarding
:mod:`.docker.teardown`'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from benchflow.errors import (
    CapabilityError,
    InfraError,
    SandboxError,
)

from .. import ca
from .. import docker_engine as eng
from ..base import DEFAULT_OUTPUT_CAP_BYTES, Capabilities, ExecResult, MetadataBlock, SandboxSpec
from ..docker_build import build_image
from ..docker_engine import call
from ..docker_exec import run as run_exec
from ..docker_setup import parse_ready, resolve_workdir
from ..engine_api import (
    EngineError,
    ImageNotFound,
    NotFound,
)
from ..engine_stream import attach_stream
from .container import State, container_network, container_request
from .room import room_to_start
from .snapshots import Snapshots, image_workdir
from .stream import DockerProcess, open_process
from .teardown import Teardown

if TYPE_CHECKING:
    from ..copyout import CopyReport
    from .pod import DockerPod

log = logging.getLogger(__name__)



class DockerSandbox(Snapshots, Teardown):
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
        """The task's other compose services, pod-style in this container's network (:mod:`.docker.pod`)."""
        self.metadata_block: tuple[str, MetadataBlock] | None = None
        """(container, its cloud-metadata block) once :meth:`enforce_metadata_block` put it in place."""

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
            from . import pod  # only a task with compose services loads it

            self.pod = pod.DockerPod(pod.load(self.spec.compose_file, self.spec.compose_variables), self)
        if self.pod is not None:
            await self.pod.build()

    def service(self, name: str):
        """The compose service ``name`` as a sandbox view (``main`` is this sandbox)."""
        from ..compose_file import MAIN

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
            from .cache import record_pull

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
        self._workdir = resolve_workdir(self.spec.workdir, image_workdir(api, self.image))
        config, name = container_request(self.spec, self.image, self._workdir, network=network,
                                         labels=self._labels(), runtime=self.runtime, pod=self.pod)
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
                from ..tarstream import pack_members

                bundle = ca.read_bundle(self.spec.ca_bundle)
                await call(self.api.put_archive, self._container, "/",
                           pack_members([(ca.CA_PATH, bundle, 0o644)]))
            worker = asyncio.ensure_future(call(self._start_blocking, box))
            try:
                status, output = await asyncio.wait_for(asyncio.shield(worker), self.spec.setup_timeout_sec)
            except asyncio.TimeoutError:
                raise SandboxError(f"{self.spec.name}: sandbox setup did not finish within "
                                   f"{self.spec.setup_timeout_sec:g}s (--sandbox-setup-timeout)") from None
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

    async def enforce_metadata_block(self) -> MetadataBlock:
        """See :func:`benchflow.sandbox.base.enforce_metadata_block` (:mod:`.docker.metadata`: routes and
        neighbour entries put into the container's network namespace by a helper container)."""
        from .metadata import enforce

        return await enforce(self)

    def room_to_start(self):
        """See :func:`benchflow.sandbox.base.room_to_start` (:mod:`.docker.room`: the pids limit is
        raised through the engine while the block runs)."""
        return room_to_start(self.api, self._require_container())

    async def put(self, local: Path, remote: str) -> None:
        await self.put_many([(local, remote)])

    async def put_many(self, items: list[tuple[Path, str]]) -> None:
        """Several :meth:`put` calls in one engine round trip (one archive)."""
        for local, _ in items:
            if not Path(local).exists() and not Path(local).is_symlink():
                raise FileNotFoundError(f"put: {local} does not exist")
        container = self._require_container()
        from ..tarstream import pack_many  # tarfile: loaded while the first sandbox started (jobs.ahead)

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

        from ..copyout import copy_out_tar

        def fetch() -> CopyReport:
            try:
                stream, stat = self.api.get_archive(container, remote, chunk_size=1 << 20)
            except NotFound as exc:
                raise FileNotFoundError(f"get: {remote} does not exist in the sandbox") from exc
            return copy_out_tar(stream, stat["name"], Path(local))

        return await call(fetch)

    async def get_many(self, items: list[tuple[str, Path]]) -> list[CopyReport | Exception]:
        """:meth:`get` of folders side by side (``/logs/agent``, ``/logs/artifacts``) in one archive read of
        their parent (:func:`~.copyout.copy_out_tar_split`); each item's report, or the error its own
        :meth:`get` raises. Anything else, or an archive the split cannot take, is copied item by item."""
        from ..downloads import one_by_one, siblings

        shared = siblings([remote for remote, _ in items])
        if shared is None:
            return await one_by_one(self, items)
        parent, names = shared
        container = self._require_container()
        from ..copyout import copy_out_tar_split

        def fetch() -> dict[str, CopyReport | None] | None:
            try:
                stream, stat = self.api.get_archive(container, parent, chunk_size=1 << 20)
            except NotFound:
                return None
            return copy_out_tar_split(stream, stat["name"], {name: Path(local) for name, (_, local) in zip(names, items)})

        split = await call(fetch)
        if split is None:
            return await one_by_one(self, items)
        return [split[name] or FileNotFoundError(f"get: {remote} does not exist in the sandbox")
                for name, (remote, _) in zip(names, items)]
