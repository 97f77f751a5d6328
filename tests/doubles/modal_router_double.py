"""The task command router of the Modal double (:mod:`tests.doubles.modal_api_double`).

Modal runs a sandbox's commands through this second gRPC service: the client
starts an exec, reads its stdout and stderr as server streams from a byte
offset (a dropped stream resumes where it stopped), writes stdin at offsets
with an explicit EOF, and waits for the exit status. Each exec here is an
engine exec in the sandbox's container with its stdio on a hijacked socket; a
reader thread splits the multiplexed output into the two streams. Every call
must carry the ``Bearer`` token ``TaskGetCommandRouterAccess`` handed out.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass, field

import docker
from grpclib import GRPCError, Status
from modal_proto import task_command_router_grpc
from modal_proto import task_command_router_pb2 as sr

from tests.doubles.modal_double_state import State, complete, token_subject

STDERR = sr.TaskExecStdioFileDescriptor.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR


@dataclass
class Exec:
    id: str
    engine_id: str
    sock: object
    loop: asyncio.AbstractEventLoop
    output: tuple[bytearray, bytearray] = field(default_factory=lambda: (bytearray(), bytearray()))
    written: int = 0
    stdin_closed: bool = False
    code: int | None = None
    eof: bool = False
    changed: tuple[asyncio.Event, asyncio.Event] = field(default_factory=lambda: (asyncio.Event(), asyncio.Event()))
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    def raw(self) -> socket.socket:
        return getattr(self.sock, "_sock", self.sock)

    def notify(self) -> None:
        for event in self.changed:
            event.set()

    def close(self) -> None:
        try:
            self.raw().close()
        except OSError:
            pass


def collect(api, process: Exec) -> None:
    """Read the exec's output until it ends, then record its exit code (137 when its sandbox went)."""
    from docker.utils.socket import frames_iter

    try:
        for stream, chunk in frames_iter(process.sock, tty=False):
            process.output[0 if stream == 1 else 1].extend(chunk)
            process.loop.call_soon_threadsafe(process.notify)
    except (OSError, ValueError):
        pass
    try:
        while (info := api.exec_inspect(process.engine_id))["Running"]:
            time.sleep(0.02)
        code = int(info["ExitCode"])
    except docker.errors.APIError:
        code = 137

    def finish() -> None:
        process.code, process.eof = code, True
        process.notify()
        process.finished.set()

    process.close()
    process.loop.call_soon_threadsafe(finish)


@complete
class Router(task_command_router_grpc.TaskCommandRouterBase):
    """See the module docstring."""

    def __init__(self, state: State) -> None:
        self.state = state

    async def _request(self, stream, name: str):
        self.state.calls.append(name)
        request = await stream.recv_message()
        token = (stream.metadata or {}).get("authorization", "").removeprefix("Bearer ")
        if token_subject(token) != request.task_id:
            raise GRPCError(Status.UNAUTHENTICATED, "missing or wrong task token")
        return request

    def _exec(self, request) -> Exec:
        process = self.state.box_of_task(request.task_id).execs.get(request.exec_id)
        if process is None:
            raise GRPCError(Status.NOT_FOUND, f"exec {request.exec_id} not found")
        return process

    async def TaskExecStart(self, stream) -> None:
        request = await self._request(stream, "TaskExecStart")
        box = self.state.box_of_task(request.task_id)
        env = {entry.key: entry.value for entry in request.env}
        for source in request.secret_sources:
            env.update(self.state.secrets.get(source.secret_id, {}) if source.secret_id else dict(source.env.contents))
        for secret_id in request.secret_ids:
            env.update(self.state.secrets.get(secret_id, {}))
        api = self.state.engine.api

        def start():
            engine_id = api.exec_create(box.container, list(request.command_args), stdin=True, stdout=True,
                                        stderr=True, workdir=request.workdir or None, environment=env or None)["Id"]
            return engine_id, api.exec_start(engine_id, socket=True)

        try:
            engine_id, sock = await asyncio.to_thread(start)
        except docker.errors.APIError as exc:
            raise GRPCError(Status.FAILED_PRECONDITION, f"exec failed: {exc.explanation or exc}") from exc
        process = Exec(request.exec_id, engine_id, sock, asyncio.get_running_loop())
        box.execs[request.exec_id] = process
        threading.Thread(target=collect, args=(api, process), daemon=True).start()
        await stream.send_message(sr.TaskExecStartResponse())

    async def TaskExecStdioRead(self, stream) -> None:
        request = await self._request(stream, "TaskExecStdioRead")
        process = self._exec(request)
        which = 1 if request.file_descriptor == STDERR else 0
        offset, data, changed = request.offset, process.output[which], process.changed[which]
        while True:
            changed.clear()
            if len(data) > offset:
                chunk = bytes(data[offset:offset + (1 << 20)])
                offset += len(chunk)
                await stream.send_message(sr.TaskExecStdioReadResponse(data=chunk))
                continue
            if process.eof:
                return
            await changed.wait()

    async def TaskExecStdinWrite(self, stream) -> None:
        request = await self._request(stream, "TaskExecStdinWrite")
        process = self._exec(request)
        fresh = request.data[max(0, process.written - request.offset):]
        if request.offset > process.written:
            raise GRPCError(Status.INVALID_ARGUMENT, f"stdin offset {request.offset} beyond {process.written}")
        try:
            if fresh and not process.stdin_closed:
                await asyncio.to_thread(process.raw().sendall, fresh)
                process.written += len(fresh)
            if request.eof and not process.stdin_closed:
                process.stdin_closed = True
                process.raw().shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the process ended: what it was sent is moot
        await stream.send_message(sr.TaskExecStdinWriteResponse())

    async def TaskExecStdinStatus(self, stream) -> None:
        request = await self._request(stream, "TaskExecStdinStatus")
        process = self._exec(request)
        await stream.send_message(sr.TaskExecStdinStatusResponse(num_bytes_written=process.written,
                                                                 closed=process.stdin_closed))

    async def TaskExecWait(self, stream) -> None:
        request = await self._request(stream, "TaskExecWait")
        process = self._exec(request)
        await process.finished.wait()
        await stream.send_message(sr.TaskExecWaitResponse(code=process.code))

    async def TaskExecPoll(self, stream) -> None:
        request = await self._request(stream, "TaskExecPoll")
        process = self._exec(request)
        done = process.code is not None
        await stream.send_message(sr.TaskExecPollResponse(code=process.code) if done else sr.TaskExecPollResponse())

    async def TaskSnapshotFilesystem(self, stream) -> None:
        request = await self._request(stream, "TaskSnapshotFilesystem")
        box = self.state.box_of_task(request.task_id)
        layer = await asyncio.to_thread(self.state.committed, box)
        await stream.send_message(sr.TaskSnapshotFilesystemResponse(image_id=layer.id))
