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
  ``ImageGetOrCreate``/``ImageJoinStreaming`` and ``ImageFromId`` (the builds:
  :mod:`tests.doubles.modal_double_state`), ``SandboxCreateV2`` (the SDK's
  default: env inline, network as ``network_access``) and ``SandboxCreate``
  (V1, which the SDK uses for GPU sandboxes: env as secrets, ``block_network``),
  both with cpu, memory and tags; ``SandboxGetTaskId``, ``SandboxWait``,
  ``SandboxTerminate``, ``SandboxList`` (tag filter), ``SandboxTagsGet``/``Set``
  (each with its ``…V2`` twin, which takes the same messages), and
  ``TaskGetCommandRouterAccess``/``SandboxGetCommandRouterAccess``;
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
import secrets
import string
import threading
import time
from dataclasses import dataclass

import grpclib.server
from google.protobuf import empty_pb2
from grpclib import GRPCError, Status
from modal_proto import api_grpc, api_pb2

from tests.doubles.modal_double_state import (
    BUILDER_VERSION,
    TOKEN_ID,
    TOKEN_SECRET,
    Box,
    State,
    complete,
    fake_jwt,
)


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
        if request.app_name not in self.state.apps:
            if request.object_creation_type != api_pb2.OBJECT_CREATION_TYPE_CREATE_IF_MISSING:
                raise GRPCError(Status.NOT_FOUND, f"App '{request.app_name}' not found")
            self.state.apps[request.app_name] = f"ap-{secrets.token_hex(8)}"
        app_id = self.state.apps[request.app_name]
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
