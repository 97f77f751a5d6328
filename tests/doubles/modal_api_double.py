"""A test double of Modal: the subset of its gRPC API and task command router that the ``modal`` SDK calls.

Modal's client speaks gRPC (grpclib, HTTP/2) to ``MODAL_SERVER_URL``; commands
in a sandbox go to a second gRPC service, the task command router, whose URL
and token the client gets from ``TaskGetCommandRouterAccess`` (the SDK allows
plain ``http`` for it only when the server is on localhost, as here). This
double serves both services on one loopback port with the SDK's own generated
service bases (``modal_proto.api_grpc.ModalClientBase``,
``modal_proto.task_command_router_grpc.TaskCommandRouterBase``) and backs each
sandbox with a real container on the local Docker engine:

- control plane: ``ClientHello``, ``AuthTokenGet``, ``EnvironmentGetOrCreate``
  (builder version 2025.06), ``AppGetOrCreate``, ``SecretGetOrCreate``
  (``env`` dicts), ``MountBatchedCheckExistence``/``MountPutFile``/``MountGetOrCreate``
  (build contexts, files sent inline: no blob store, so none over 4 MiB),
  ``ImageGetOrCreate``/``ImageJoinStreaming`` (each layer a ``docker build`` of
  its Dockerfile commands, ``FROM <tag>`` of a base layer resolved to that
  layer's local image, cached by definition like Modal's own cache),
  ``ImageFromId``, ``SandboxCreate`` (cpu, memory, ``block_network`` as a
  container without a network, env from secrets, tags), ``SandboxGetTaskId``,
  ``SandboxWait``, ``SandboxTerminate``, ``SandboxList`` (tag filter),
  ``SandboxTagsGet``/``SandboxTagsSet``, ``TaskGetCommandRouterAccess``;
- task command router (:mod:`tests.doubles.modal_router_double`): exec start,
  stdout/stderr streaming from an offset, stdin writes with offsets and EOF,
  wait/poll, and ``TaskSnapshotFilesystem`` (``docker commit``; the image is an
  image id a later sandbox can start from).

Every other RPC answers UNIMPLEMENTED. Calls without the token pair are
refused with UNAUTHENTICATED. Containers carry ``benchflow-modal-double=<pid>``
and :meth:`Served.stop` removes them and the snapshot images.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import os
import secrets
import string
import tarfile
import threading
import time
from dataclasses import dataclass, field

import docker
import grpclib.server
from google.protobuf import empty_pb2
from grpclib import GRPCError, Status
from modal_proto import api_grpc, api_pb2

TOKEN_ID = "ak-double"
TOKEN_SECRET = "as-double"
LABEL = "benchflow-modal-double"
BUILDER_VERSION = "2025.06"
PUBLIC_NETWORK = os.environ.get("BENCHFLOW_DOCKER_PUBLIC_NETWORK") or "bridge"
"""The engine network of a sandbox with a network (an engine without a bridge names another)."""
SUCCESS = api_pb2.GenericResult.GENERIC_STATUS_SUCCESS
FAILURE = api_pb2.GenericResult.GENERIC_STATUS_FAILURE
TERMINATED = api_pb2.GenericResult.GENERIC_STATUS_TERMINATED


def complete(cls):
    """Give every RPC of the generated base that ``cls`` leaves out an UNIMPLEMENTED answer."""
    for name in getattr(cls, "__abstractmethods__", ()):
        async def missing(self, stream, _name=name) -> None:
            raise GRPCError(Status.UNIMPLEMENTED, f"{_name} is not doubled")
        setattr(cls, name, missing)
    cls.__abstractmethods__ = frozenset()
    return cls


def fake_jwt(subject: str) -> str:
    """An unsigned token with a far expiry: the SDK only reads its ``exp``."""
    part = lambda data: base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")  # noqa: E731
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'exp': int(time.time()) + 86400})}.x"


def token_subject(token: str) -> str | None:
    """The subject of a token :func:`fake_jwt` made; None for anything else."""
    try:
        payload = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"]
    except (IndexError, ValueError, KeyError, TypeError):
        return None


@dataclass
class Layer:
    """One image: its definition, the local tag it was built as, and how the build went."""

    id: str
    key: str
    tag: str
    status: int = 0
    error: str = ""
    log: str = ""
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class Box:
    id: str
    task_id: str
    app_id: str
    definition: api_pb2.Sandbox
    tags: dict[str, str]
    env: dict[str, str]
    created: float = field(default_factory=time.time)
    container: str | None = None
    result: api_pb2.GenericResult | None = None
    execs: dict[str, object] = field(default_factory=dict)


class State:
    """What the double knows; shared by both services."""

    def __init__(self) -> None:
        self.url = ""
        self.apps: dict[str, str] = {}
        self.secrets: dict[str, dict[str, str]] = {}
        self.blobs: dict[str, bytes] = {}
        self.mounts: dict[str, list[api_pb2.MountFile]] = {}
        self.layers: dict[str, Layer] = {}
        self.by_key: dict[str, str] = {}
        self.boxes: dict[str, Box] = {}
        self.snapshots: list[str] = []
        self.calls: list[str] = []
        """Every RPC's name in order (control plane and router)."""
        self.created: list[api_pb2.SandboxCreateRequest] = []
        self._engine = None

    @property
    def engine(self):
        if self._engine is None:
            self._engine = docker.from_env()
        return self._engine

    def box_of_task(self, task_id: str) -> Box:
        for box in list(self.boxes.values()):
            if box.task_id == task_id and box.result is None:
                return box
        raise GRPCError(Status.NOT_FOUND, f"task {task_id} not found")

    # --- images -------------------------------------------------------------------------------
    def image(self, definition: api_pb2.Image) -> Layer:
        key = hashlib.sha256(definition.SerializeToString(deterministic=True)).hexdigest()
        if key in self.by_key and self.layers[self.by_key[key]].status != FAILURE:
            return self.layers[self.by_key[key]]
        layer = Layer(id=f"im-{secrets.token_hex(8)}", key=key, tag=f"{LABEL}:{key[:20]}")
        self.layers[layer.id], self.by_key[key] = layer, layer.id
        threading.Thread(target=self._build, args=(layer, definition), daemon=True).start()
        return layer

    def _build(self, layer: Layer, definition: api_pb2.Image) -> None:
        try:
            bases = {base.docker_tag: self.layers[base.image_id] for base in definition.base_images}
            for base in bases.values():
                base.done.wait()
                if base.status != SUCCESS:
                    raise RuntimeError(f"base image {base.id} failed")
            lines = [_from_base(line, bases) for line in definition.dockerfile_commands]
            context = io.BytesIO()
            with tarfile.open(fileobj=context, mode="w") as out:
                for item in self.mounts.get(definition.context_mount_id, []):
                    data = self.blobs[item.sha256_hex]
                    info = tarfile.TarInfo(item.filename.lstrip("/"))
                    info.size, info.mode = len(data), (item.mode & 0o7777) or 0o644
                    out.addfile(info, io.BytesIO(data))
                for extra in definition.context_files:
                    info = tarfile.TarInfo(extra.filename.lstrip("/"))
                    info.size = len(extra.data)
                    out.addfile(info, io.BytesIO(extra.data))
                text = "\n".join(lines).encode()
                info = tarfile.TarInfo("Dockerfile.modal-double")
                info.size = len(text)
                out.addfile(info, io.BytesIO(text))
            context.seek(0)
            log = []
            for chunk in self.engine.api.build(fileobj=context, custom_context=True, tag=layer.tag, rm=True,
                                               forcerm=True, dockerfile="Dockerfile.modal-double",
                                               network_mode="host", decode=True):
                if "error" in chunk:
                    raise RuntimeError("".join(log)[-2000:] + chunk["error"])
                log.append(chunk.get("stream", ""))
            layer.log, layer.status = "".join(log), SUCCESS
        except Exception as exc:  # noqa: BLE001 - reported as Modal reports a failed build
            layer.status, layer.error = FAILURE, str(exc)[-4000:]
        finally:
            layer.done.set()

    def committed(self, box: Box) -> Layer:
        """A filesystem snapshot of ``box``: its container committed as a new image."""
        layer = Layer(id=f"im-{secrets.token_hex(8)}", key="", tag=f"{LABEL}-snap:{secrets.token_hex(8)}",
                      status=SUCCESS)
        repository, _, tag = layer.tag.partition(":")
        self.engine.containers.get(box.container).commit(repository=repository, tag=tag)
        layer.done.set()
        self.layers[layer.id] = layer
        self.snapshots.append(layer.tag)
        return layer

    # --- sandboxes ----------------------------------------------------------------------------
    def bring_up(self, box: Box) -> None:
        definition = box.definition
        layer = self.layers.get(definition.image_id)
        try:
            if layer is None:
                raise RuntimeError(f"image {definition.image_id} not found")
            layer.done.wait()
            env = dict(box.env)
            for secret_id in definition.secret_ids:
                env.update(self.secrets.get(secret_id, {}))
            resources = definition.resources
            container = self.engine.containers.create(
                layer.tag, entrypoint=list(definition.entrypoint_args) or ["sleep", "infinity"], command=[],
                environment=env, labels={LABEL: str(os.getpid()), "sandbox": box.id}, init=True, detach=True,
                working_dir=definition.workdir or None,
                network_mode="none" if _blocked(definition) else PUBLIC_NETWORK,
                nano_cpus=int((resources.milli_cpu or 125) * 1e6),
                mem_limit=f"{resources.memory_mb or 128}m")
            box.container = container.id
            if box.result is not None:  # terminated while it came up
                container.remove(force=True)
                return
            container.start()
        except Exception as exc:  # noqa: BLE001 - the sandbox ends with a failure, as Modal's would
            box.result = api_pb2.GenericResult(status=FAILURE, exception=str(exc)[-2000:])

    def terminate(self, box: Box) -> None:
        if box.result is None:
            box.result = api_pb2.GenericResult(status=TERMINATED)
        for process in list(box.execs.values()):
            process.close()
        if box.container:
            try:
                self.engine.containers.get(box.container).remove(force=True)
            except docker.errors.NotFound:
                pass

    def close(self) -> None:
        if self._engine is None:
            return
        for container in self.engine.containers.list(all=True, filters={"label": f"{LABEL}={os.getpid()}"}):
            container.remove(force=True)
        for tag in self.snapshots:
            try:
                self.engine.images.remove(tag, force=True)
            except docker.errors.APIError:
                pass


def _blocked(definition: api_pb2.Sandbox) -> bool:
    """Whether the sandbox has no network: V2 creates send ``network_access`` BLOCKED, V1 ``block_network``."""
    kind = definition.network_access.network_access_type
    if kind == api_pb2.NetworkAccess.NetworkAccessType.ALLOWLIST:
        raise RuntimeError("the double has no allow-listed networks")
    return definition.block_network or kind == api_pb2.NetworkAccess.NetworkAccessType.BLOCKED


def _from_base(line: str, bases: dict[str, Layer]) -> str:
    words = line.split()
    if words and words[0].upper() == "FROM" and len(words) > 1 and words[1] in bases:
        words[1] = bases[words[1]].tag
        return " ".join(words)
    return line


def authorized(stream) -> None:
    metadata = stream.metadata or {}
    if metadata.get("x-modal-token-id") != TOKEN_ID or metadata.get("x-modal-token-secret") != TOKEN_SECRET:
        raise GRPCError(Status.UNAUTHENTICATED, "Invalid token id or secret")


@complete
class ModalApi(api_grpc.ModalClientBase):
    """The control plane (see the module docstring)."""

    def __init__(self, state: State) -> None:
        self.state = state

    async def _request(self, stream, name: str):
        self.state.calls.append(name)
        authorized(stream)
        return await stream.recv_message()

    async def ClientHello(self, stream) -> None:
        await self._request(stream, "ClientHello")
        await stream.send_message(api_pb2.ClientHelloResponse(image_builder_version=BUILDER_VERSION))

    async def AuthTokenGet(self, stream) -> None:
        await self._request(stream, "AuthTokenGet")
        await stream.send_message(api_pb2.AuthTokenGetResponse(token=fake_jwt("client")))

    async def EnvironmentGetOrCreate(self, stream) -> None:
        await self._request(stream, "EnvironmentGetOrCreate")
        settings = api_pb2.EnvironmentSettings(image_builder_version=BUILDER_VERSION, webhook_suffix="double")
        await stream.send_message(api_pb2.EnvironmentGetOrCreateResponse(
            environment_id="en-double", metadata=api_pb2.EnvironmentMetadata(name="main", settings=settings)))

    async def AppGetOrCreate(self, stream) -> None:
        request = await self._request(stream, "AppGetOrCreate")
        app_id = self.state.apps.setdefault(request.app_name, f"ap-{secrets.token_hex(8)}")
        await stream.send_message(api_pb2.AppGetOrCreateResponse(
            app_id=app_id, handle_metadata=api_pb2.AppHandleMetadata(app_id=app_id, environment_name="main")))

    async def SecretGetOrCreate(self, stream) -> None:
        request = await self._request(stream, "SecretGetOrCreate")
        secret_id = f"st-{secrets.token_hex(8)}"
        self.state.secrets[secret_id] = dict(request.env_dict)
        await stream.send_message(api_pb2.SecretGetOrCreateResponse(secret_id=secret_id))

    async def MountBatchedCheckExistence(self, stream) -> None:
        request = await self._request(stream, "MountBatchedCheckExistence")
        missing = [h for h in request.sha256_hex_hashes if h not in self.state.blobs]
        await stream.send_message(api_pb2.MountBatchedCheckExistenceResponse(missing_sha256_hex_hashes=missing))

    async def MountPutFile(self, stream) -> None:
        request = await self._request(stream, "MountPutFile")
        if request.data_blob_id:
            raise GRPCError(Status.UNIMPLEMENTED, "the double has no blob store (files over 4 MiB)")
        self.state.blobs[request.sha256_hex] = request.data
        await stream.send_message(api_pb2.MountPutFileResponse(exists=request.sha256_hex in self.state.blobs))

    async def MountGetOrCreate(self, stream) -> None:
        request = await self._request(stream, "MountGetOrCreate")
        mount_id = f"mo-{secrets.token_hex(8)}"
        self.state.mounts[mount_id] = list(request.files)
        await stream.send_message(api_pb2.MountGetOrCreateResponse(mount_id=mount_id))

    async def ImageGetOrCreate(self, stream) -> None:
        request = await self._request(stream, "ImageGetOrCreate")
        layer = self.state.image(request.image)
        result = api_pb2.GenericResult(status=layer.status) if layer.done.is_set() else None
        await stream.send_message(api_pb2.ImageGetOrCreateResponse(image_id=layer.id, result=result))

    async def ImageJoinStreaming(self, stream) -> None:
        request = await self._request(stream, "ImageJoinStreaming")
        layer = self.state.layers.get(request.image_id)
        if layer is None:
            raise GRPCError(Status.NOT_FOUND, f"image {request.image_id} not found")
        finished = await asyncio.to_thread(layer.done.wait, request.timeout or 55)
        if not finished:
            return  # the SDK asks again
        if layer.log:
            await stream.send_message(api_pb2.ImageJoinStreamingResponse(
                task_logs=[api_pb2.TaskLogs(data=layer.log[-20000:], file_descriptor=api_pb2.FILE_DESCRIPTOR_STDOUT)],
                entry_id="1"))
        await stream.send_message(api_pb2.ImageJoinStreamingResponse(
            result=api_pb2.GenericResult(status=layer.status, exception=layer.error), eof=True,
            metadata=api_pb2.ImageMetadata(image_builder_version=BUILDER_VERSION)))

    async def ImageFromId(self, stream) -> None:
        request = await self._request(stream, "ImageFromId")
        if request.image_id not in self.state.layers:
            raise GRPCError(Status.NOT_FOUND, f"Image {request.image_id} not found")
        await stream.send_message(api_pb2.ImageFromIdResponse(image_id=request.image_id))

    def _create(self, request, env: dict[str, str], sandbox_id: str) -> Box:
        self.state.created.append(request)
        box = Box(id=sandbox_id, task_id=f"ta-{secrets.token_hex(8)}", app_id=request.app_id,
                  definition=request.definition, tags={t.tag_name: t.tag_value for t in request.tags}, env=env)
        self.state.boxes[box.id] = box
        threading.Thread(target=self.state.bring_up, args=(box,), daemon=True).start()
        return box

    async def SandboxCreate(self, stream) -> None:
        """The V1 create (the SDK's path for GPU sandboxes): env comes as secrets of the definition."""
        request = await self._request(stream, "SandboxCreate")
        v1_id = "sb-" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(22))
        box = self._create(request, {}, v1_id)  # the SDK tells V1 sandboxes by the shape of their id
        await stream.send_message(api_pb2.SandboxCreateResponse(
            sandbox_id=box.id, metadata=api_pb2.SandboxHandleMetadata(app_id=box.app_id)))

    async def SandboxCreateV2(self, stream) -> None:
        """The SDK's default create: env comes inline as secret sources."""
        request = await self._request(stream, "SandboxCreateV2")
        env: dict[str, str] = {}
        for source in request.secret_sources:
            env.update(self.state.secrets.get(source.secret_id, {}) if source.secret_id else dict(source.env.contents))
        box = self._create(request, env, f"sb-v2-{secrets.token_hex(8)}")
        await stream.send_message(api_pb2.SandboxCreateV2Response(
            sandbox_id=box.id, metadata=api_pb2.SandboxHandleMetadata(app_id=box.app_id)))

    def _box(self, sandbox_id: str) -> Box:
        box = self.state.boxes.get(sandbox_id)
        if box is None:
            raise GRPCError(Status.NOT_FOUND, f"Sandbox {sandbox_id} not found")
        return box

    async def SandboxGetTaskId(self, stream) -> None:
        request = await self._request(stream, "SandboxGetTaskId")
        box = self._box(request.sandbox_id)
        if box.result is not None:
            await stream.send_message(api_pb2.SandboxGetTaskIdResponse(task_result=box.result))
        elif box.container is None:
            await stream.send_message(api_pb2.SandboxGetTaskIdResponse())  # still scheduling: the SDK polls
        else:
            await stream.send_message(api_pb2.SandboxGetTaskIdResponse(task_id=box.task_id))

    async def SandboxWait(self, stream) -> None:
        request = await self._request(stream, "SandboxWait")
        box = self._box(request.sandbox_id)
        deadline = time.monotonic() + (request.timeout or 0)
        while box.result is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await stream.send_message(api_pb2.SandboxWaitResponse(result=box.result))

    async def SandboxTerminate(self, stream) -> None:
        request = await self._request(stream, "SandboxTerminate")
        box = self.state.boxes.get(request.sandbox_id)
        if box is not None:
            await asyncio.to_thread(self.state.terminate, box)
        await stream.send_message(api_pb2.SandboxTerminateResponse())

    async def SandboxList(self, stream) -> None:
        request = await self._request(stream, "SandboxList")
        wanted = {t.tag_name: t.tag_value for t in request.tags}
        before = request.before_timestamp or float("inf")
        rows = sorted((box for box in self.state.boxes.values()
                       if (not request.app_id or box.app_id == request.app_id) and box.created < before
                       and (request.include_finished or box.result is None)
                       and all(box.tags.get(k) == v for k, v in wanted.items())),
                      key=lambda box: -box.created)[:100]
        await stream.send_message(api_pb2.SandboxListResponse(sandboxes=[_info(box) for box in rows]))

    async def SandboxTagsGet(self, stream) -> None:
        request = await self._request(stream, "SandboxTagsGet")
        box = self._box(request.sandbox_id)
        await stream.send_message(api_pb2.SandboxTagsGetResponse(
            tags=[api_pb2.SandboxTag(tag_name=k, tag_value=v) for k, v in box.tags.items()]))

    async def SandboxTagsSet(self, stream) -> None:
        request = await self._request(stream, "SandboxTagsSet")
        self._box(request.sandbox_id).tags = {t.tag_name: t.tag_value for t in request.tags}
        await stream.send_message(empty_pb2.Empty())

    async def TaskGetCommandRouterAccess(self, stream) -> None:
        request = await self._request(stream, "TaskGetCommandRouterAccess")
        self.state.box_of_task(request.task_id)
        await stream.send_message(api_pb2.TaskGetCommandRouterAccessResponse(
            jwt=fake_jwt(request.task_id), url=self.state.url))

    async def SandboxGetCommandRouterAccess(self, stream) -> None:
        request = await self._request(stream, "SandboxGetCommandRouterAccess")
        box = self._box(request.sandbox_id) if request.sandbox_id else self.state.box_of_task(request.task_id)
        await stream.send_message(api_pb2.SandboxGetCommandRouterAccessResponse(
            jwt=fake_jwt(box.task_id), url=self.state.url))

    # The V2 calls (the SDK's default sandboxes) take the same messages as the V1 ones.
    SandboxGetTaskIdV2 = SandboxGetTaskId
    SandboxWaitV2 = SandboxWait
    SandboxTerminateV2 = SandboxTerminate
    SandboxListV2 = SandboxList
    SandboxTagsGetV2 = SandboxTagsGet
    SandboxTagsSetV2 = SandboxTagsSet


def _info(box: Box) -> api_pb2.SandboxInfo:
    finished = box.result is not None
    return api_pb2.SandboxInfo(
        id=box.id, created_at=box.created, app_id=box.app_id, image_id=box.definition.image_id,
        name=box.definition.name, timeout_secs=box.definition.timeout_secs,
        tags=[api_pb2.SandboxTag(tag_name=k, tag_value=v) for k, v in box.tags.items()],
        task_info=api_pb2.TaskInfo(id=box.task_id, sandbox_id=box.id, started_at=box.created,
                                   finished_at=time.time() if finished else 0.0, result=box.result))


@dataclass
class Served:
    state: State
    url: str
    loop: asyncio.AbstractEventLoop
    server: grpclib.server.Server
    thread: threading.Thread

    def env(self) -> dict[str, str]:
        """What a BenchFlow process needs to use this double as its Modal."""
        return {"MODAL_SERVER_URL": self.url, "MODAL_TOKEN_ID": TOKEN_ID, "MODAL_TOKEN_SECRET": TOKEN_SECRET}

    def stop(self) -> None:
        async def shut() -> None:
            self.server.close()
            await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.state.close()


def serve() -> Served:
    """Start the double on a free loopback port in a thread of this process."""
    from tests.doubles.modal_router_double import Router

    state = State()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    made: list[grpclib.server.Server] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        made.append(grpclib.server.Server([ModalApi(state), Router(state)]))
        loop.run_until_complete(made[0].start("127.0.0.1", 0))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True, name="modal-double")
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the Modal double did not start")
    server = made[0]
    port = server._server.sockets[0].getsockname()[1]
    state.url = f"http://127.0.0.1:{port}"
    return Served(state, state.url, loop, server, thread)
