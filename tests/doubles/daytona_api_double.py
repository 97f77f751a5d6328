"""A test double of Daytona: the subset of its REST API, toolbox API and object storage the SDK calls.

It speaks the wire format of the ``daytona`` SDK's generated clients (JSON in
camelCase, multipart file transfer) on loopback, and backs each Daytona
sandbox with a real container on the local Docker engine, so commands and
files really happen:

- ``/api/sandbox`` create (built in the background from ``buildInfo``: the
  Dockerfile text plus context archives from the object storage, cached by
  their digest like Daytona's own build cache), get, list (``labels`` filter,
  or every sandbox of the account without one; one page), delete; ``networkBlockAll`` is a container without a network;
  ``/api/object-storage/push-access`` names the S3 endpoint below;
- ``/toolbox/{id}/process/session…``: sessions whose commands run as engine
  execs of ``sh -c <command>`` (stdout, stderr and exit code kept apart; input
  written to the command's stdin);
- ``/toolbox/{id}/files/bulk-upload`` and ``bulk-download``;
- ``/s3/{bucket}/{key}``: HEAD and PUT of context archives (path-style S3).

Stop, start and label replacement (kept sandboxes) and snapshots (``docker commit``; a sandbox
created with ``snapshot`` starts from it) are doubled. Not doubled: websockets (log follow, state
events), volumes, previews.
Containers carry the label ``benchflow-daytona-double=<pid>`` and ``close()`` removes them.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import socket
import tarfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import docker
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.doubles.engine_cleanup import remove_containers

API_KEY = "double-key"
ORG = "org-double"
LABEL = "benchflow-daytona-double"


@dataclass
class _Command:
    id: str
    command: str
    exec_id: str
    sock: object
    """The exec's hijacked socket: stdin out, multiplexed stdout/stderr in."""
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    exit_code: int | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def close(self) -> None:
        for target in (getattr(self.sock, "_sock", None), self.sock):
            try:
                target.close()
            except (OSError, AttributeError):
                pass


@dataclass
class _Box:
    id: str
    request: dict
    state: str = "creating"
    error: str | None = None
    container: str | None = None
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    sessions: dict[str, dict[str, _Command]] = field(default_factory=dict)

    def dto(self, base: str) -> dict:
        req = self.request
        return {"id": self.id, "organizationId": ORG, "name": req.get("name") or self.id, "user": req.get("user") or "root",
                "env": req.get("env") or {}, "labels": req.get("labels") or {}, "public": False,
                "networkBlockAll": bool(req.get("networkBlockAll")), "kvm": False, "target": "double",
                "cpu": req.get("cpu") or 1, "gpu": 0, "memory": req.get("memory") or 1, "disk": 3,
                "state": self.state, "errorReason": self.error, "createdAt": self.created, "updatedAt": self.created,
                "toolboxProxyUrl": f"{base}/toolbox", "autoStopInterval": req.get("autoStopInterval"),
                "snapshot": req.get("snapshot")}


class DaytonaDouble:
    """The double's state and its Starlette app; :func:`serve` runs it on a loopback port."""

    def __init__(self) -> None:
        self.boxes: dict[str, _Box] = {}
        self.objects: dict[str, bytes] = {}
        self.created: list[dict] = []
        self.snapshots: dict[str, dict] = {}
        """Snapshot name -> its DTO (``image`` names the committed image)."""
        """The body of every ``POST /api/sandbox``, in order."""
        self.requests: list[tuple[str, str]] = []
        self.base = ""
        self._engine = None
        self.lock = threading.Lock()
        sandbox = "/api/sandbox/{sid}"
        session = "/toolbox/{sid}/process/session/{session}"
        self.app = Starlette(routes=[
            Route("/api/sandbox", self.create, methods=["POST"]),
            Route("/api/sandbox", self.list, methods=["GET"]),
            Route(sandbox, self.get, methods=["GET"]),
            Route(sandbox, self.delete, methods=["DELETE"]),
            Route(sandbox + "/toolbox-proxy-url", self.proxy_url, methods=["GET"]),
            Route(sandbox + "/labels", self.set_labels, methods=["PUT"]),
            Route(sandbox + "/snapshot", self.take_snapshot, methods=["POST"]),
            Route("/api/snapshots", self.list_snapshots, methods=["GET"]),
            Route("/api/snapshots/{ref}", self.get_snapshot, methods=["GET"]),
            Route("/api/snapshots/{ref}", self.delete_snapshot, methods=["DELETE"]),
            Route(sandbox + "/stop", self.stop_box, methods=["POST"]),
            Route(sandbox + "/start", self.start_box, methods=["POST"]),
            Route("/api/object-storage/push-access", self.push_access, methods=["GET"]),
            Route("/toolbox/{sid}/process/session", self.new_session, methods=["POST"]),
            Route(session, self.drop_session, methods=["DELETE"]),
            Route(session + "/exec", self.execute, methods=["POST"]),
            Route(session + "/command/{cmd}", self.command, methods=["GET"]),
            Route(session + "/command/{cmd}/logs", self.logs, methods=["GET"]),
            Route(session + "/command/{cmd}/input", self.input, methods=["POST"]),
            Route("/toolbox/{sid}/files/bulk-upload", self.upload, methods=["POST"]),
            Route("/toolbox/{sid}/files/bulk-download", self.download, methods=["POST"]),
            Route("/s3/{bucket}/{key:path}", self.s3, methods=["HEAD", "PUT", "GET"]),
        ])
        self.app.add_middleware(_Auth, double=self)

    @property
    def engine(self):
        """The local Docker engine (asked for only when a sandbox is made: without one, creates fail)."""
        if self._engine is None:
            self._engine = docker.from_env()
        return self._engine

    # --- the REST API -------------------------------------------------------------------------
    async def create(self, request: Request) -> Response:
        body = await request.json()
        self.created.append(body)
        box = _Box(id=secrets.token_hex(8), request=body)
        with self.lock:
            self.boxes[box.id] = box
        threading.Thread(target=self._bring_up, args=(box,), daemon=True).start()
        return JSONResponse(box.dto(self.base))

    def _bring_up(self, box: _Box) -> None:
        build = box.request.get("buildInfo") or {}
        try:
            box.state = "building_snapshot"
            if box.request.get("snapshot"):
                image = self.snapshots[box.request["snapshot"]]["image"]
            else:
                image = self._image(build.get("dockerfileContent") or "", build.get("contextHashes") or [])
            if box.state != "creating" and box.id not in self.boxes:
                return
            box.state = "starting"
            req = box.request
            container = self.engine.containers.create(
                image, entrypoint=["/bin/sh", "-c", "while sleep 3600; do :; done"], command=[],
                environment=req.get("env") or {}, labels={LABEL: str(os.getpid())}, init=True, detach=True,
                network_mode="none" if req.get("networkBlockAll") else "bridge",
                nano_cpus=int((req.get("cpu") or 1) * 1e9), mem_limit=f"{req.get('memory') or 1}g")
            box.container = container.id
            container.start()
            with self.lock:
                if box.id not in self.boxes:  # deleted while it started
                    container.remove(force=True)
                    return
            box.state = "started"
        except Exception as exc:  # noqa: BLE001 - reported as Daytona reports it: a state and a reason
            box.state, box.error = "build_failed", str(exc)[-2000:]

    def _image(self, dockerfile: str, hashes: list[str]) -> str:
        tag = "benchflow-daytona-double:" + hashlib.sha256(
            json.dumps([dockerfile, hashes]).encode()).hexdigest()[:20]
        try:
            self.engine.images.get(tag)
            return tag
        except docker.errors.ImageNotFound:
            pass
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as out:
            for digest in hashes:
                with tarfile.open(fileobj=io.BytesIO(self.objects[f"{ORG}/{digest}/context.tar"])) as ctx:
                    for member in ctx.getmembers():
                        out.addfile(member, ctx.extractfile(member) if member.isreg() else None)
            info = tarfile.TarInfo("Dockerfile.daytona")
            info.size = len(dockerfile.encode())
            out.addfile(info, io.BytesIO(dockerfile.encode()))
        buffer.seek(0)
        self.engine.images.build(fileobj=buffer, custom_context=True, dockerfile="Dockerfile.daytona", tag=tag,
                                 rm=True, forcerm=True, network_mode="host")
        return tag

    def add_sandbox(self, labels: dict[str, str], state: str = "stopped", snapshot: str | None = None) -> str:
        """Record a sandbox made elsewhere (another user, the Daytona console), with no container; its id."""
        box = _Box(id=secrets.token_hex(8), request={"labels": dict(labels), "snapshot": snapshot}, state=state)
        with self.lock:
            self.boxes[box.id] = box
        return box.id

    def _box(self, request: Request) -> _Box | None:
        return self.boxes.get(request.path_params["sid"])

    async def get(self, request: Request) -> Response:
        box = self._box(request)
        return JSONResponse(box.dto(self.base)) if box else _missing("sandbox")

    async def list(self, request: Request) -> Response:
        wanted = json.loads(request.query_params.get("labels") or "{}")
        items = [box.dto(self.base) for box in list(self.boxes.values())
                 if all((box.request.get("labels") or {}).get(k) == v for k, v in wanted.items())]
        return JSONResponse({"items": items, "nextCursor": None})

    def delete(self, request: Request) -> Response:
        with self.lock:
            box = self.boxes.pop(request.path_params["sid"], None)
        if box is None:
            return _missing("sandbox")
        for commands in box.sessions.values():
            for command in commands.values():
                command.close()
        if box.container:
            try:
                self.engine.containers.get(box.container).remove(force=True)
            except docker.errors.NotFound:
                pass
        box.state = "destroyed"
        return JSONResponse(box.dto(self.base))

    def take_snapshot(self, request: Request) -> Response:
        box = self._box(request)
        if box is None or box.container is None:
            return _missing("sandbox")
        name = json.loads(_sync_body(request))["name"]
        tag = "benchflow-daytona-double-snap:" + hashlib.sha256(name.encode()).hexdigest()[:20]
        repository, _, version = tag.partition(":")
        self.engine.containers.get(box.container).commit(repository=repository, tag=version)
        self.add_snapshot(name, tag, box.id)
        return JSONResponse(box.dto(self.base))

    def add_snapshot(self, name: str, image: str | None = None, source: str = "") -> None:
        """Record a snapshot (``image`` None: one whose image is not on this engine, e.g. a killed run's)."""
        now = datetime.now(UTC).isoformat()
        self.snapshots[name] = {"id": secrets.token_hex(8), "organizationId": ORG, "general": False, "name": name,
                                "imageName": image, "image": image, "state": "active", "size": 1, "entrypoint": [],
                                "cpu": 1, "gpu": 0, "mem": 1, "disk": 3, "errorReason": None, "createdAt": now,
                                "updatedAt": now, "lastUsedAt": now, "sourceSandboxId": source}

    def _snapshot(self, ref: str) -> dict | None:
        return self.snapshots.get(ref) or next((s for s in self.snapshots.values() if s["id"] == ref), None)

    async def list_snapshots(self, request: Request) -> Response:
        part = request.query_params.get("name") or ""
        items = [s for s in self.snapshots.values() if part in s["name"]]
        return JSONResponse({"items": items, "total": len(items), "page": 1, "totalPages": 1})

    async def get_snapshot(self, request: Request) -> Response:
        found = self._snapshot(request.path_params["ref"])
        return JSONResponse(found) if found else _missing("snapshot")

    def delete_snapshot(self, request: Request) -> Response:
        found = self._snapshot(request.path_params["ref"])
        if found is None:
            return _missing("snapshot")
        del self.snapshots[found["name"]]
        try:
            if found["image"]:
                self.engine.images.remove(found["image"], force=True)
        except docker.errors.APIError:
            pass
        return Response(status_code=200)

    async def set_labels(self, request: Request) -> Response:
        box = self._box(request)
        if box is None:
            return _missing("sandbox")
        box.request["labels"] = (await request.json())["labels"]
        return JSONResponse({"labels": box.request["labels"]})

    def stop_box(self, request: Request) -> Response:
        box = self._box(request)
        if box is None or box.container is None:
            return _missing("sandbox")
        self.engine.containers.get(box.container).stop(timeout=1)
        box.state = "stopped"
        return JSONResponse(box.dto(self.base))

    def start_box(self, request: Request) -> Response:
        box = self._box(request)
        if box is None or box.container is None:
            return _missing("sandbox")
        self.engine.containers.get(box.container).start()
        box.state = "started"
        return JSONResponse(box.dto(self.base))

    async def proxy_url(self, request: Request) -> Response:
        return JSONResponse({"url": f"{self.base}/toolbox"})

    async def push_access(self, request: Request) -> Response:
        return JSONResponse({"accessKey": "ak", "secret": "sk", "sessionToken": "tok", "storageUrl": f"{self.base}/s3",
                             "organizationId": ORG, "bucket": "daytona-builds", "region": "us-east-1"})

    async def s3(self, request: Request) -> Response:
        key = request.path_params["key"]
        if request.method == "PUT":
            self.objects[key] = await request.body()
            return Response(status_code=200, headers={"ETag": '"x"'})
        if key not in self.objects:
            return Response(status_code=404)
        data = self.objects[key]
        return Response(b"" if request.method == "HEAD" else data, headers={"Content-Length": str(len(data))})

    # --- the toolbox API ----------------------------------------------------------------------
    async def new_session(self, request: Request) -> Response:
        box = self._box(request)
        if box is None:
            return _missing("sandbox")
        box.sessions[(await request.json())["sessionId"]] = {}
        return Response(status_code=201)

    def drop_session(self, request: Request) -> Response:
        box = self._box(request)
        commands = box.sessions.pop(request.path_params["session"], None) if box else None
        for command in (commands or {}).values():
            command.close()
        return Response(status_code=204)

    def execute(self, request: Request) -> Response:
        box = self._box(request)
        body = json.loads(_sync_body(request))
        if box is None or box.container is None or request.path_params["session"] not in box.sessions:
            return _missing("session")
        api = self.engine.api
        exec_id = api.exec_create(box.container, ["sh", "-c", body["command"]], stdin=True, stdout=True,
                                  stderr=True)["Id"]
        command = _Command(id=secrets.token_hex(8), command=body["command"], exec_id=exec_id,
                           sock=api.exec_start(exec_id, socket=True))
        box.sessions[request.path_params["session"]][command.id] = command
        threading.Thread(target=_collect, args=(api, command), daemon=True).start()
        if body.get("runAsync") or body.get("async"):
            return JSONResponse({"cmdId": command.id})
        command.done.wait()
        return JSONResponse({"cmdId": command.id, "exitCode": command.exit_code, "stdout": command.stdout.decode(),
                             "stderr": command.stderr.decode(), "output": (command.stdout + command.stderr).decode()})

    def _command(self, request: Request) -> _Command | None:
        box = self._box(request)
        return (box.sessions.get(request.path_params["session"]) or {}).get(request.path_params["cmd"]) if box else None

    async def command(self, request: Request) -> Response:
        command = self._command(request)
        if command is None:
            return _missing("command")
        return JSONResponse({"id": command.id, "command": command.command, "exitCode": command.exit_code})

    async def logs(self, request: Request) -> Response:
        command = self._command(request)
        if command is None:
            return _missing("command")
        out, err = bytes(command.stdout), bytes(command.stderr)
        return JSONResponse({"stdout": out.decode(errors="replace"), "stderr": err.decode(errors="replace"),
                             "output": (out + err).decode(errors="replace")})

    def input(self, request: Request) -> Response:
        command = self._command(request)
        if command is None:
            return _missing("command")
        try:
            getattr(command.sock, "_sock", command.sock).sendall(json.loads(_sync_body(request))["data"].encode())
        except OSError:
            pass
        return Response(status_code=200)

    async def upload(self, request: Request) -> Response:
        box = self._box(request)
        if box is None or box.container is None:
            return _missing("sandbox")
        form = await request.form(max_part_size=1 << 30)
        files = {}
        for name, value in form.multi_items():
            index = name.split("]")[0].split("[")[-1]
            files.setdefault(index, {})[name.rsplit(".", 1)[-1]] = value
        for item in files.values():
            data = await item["file"].read()
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as archive:
                info = tarfile.TarInfo(item["path"].lstrip("/"))
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            self.engine.containers.get(box.container).put_archive("/", buffer.getvalue())
        return Response(status_code=200)

    async def download(self, request: Request) -> Response:
        box = self._box(request)
        if box is None or box.container is None:
            return _missing("sandbox")
        boundary = secrets.token_hex(12)
        parts = []
        for path in (await request.json())["paths"]:
            try:
                stream, _ = self.engine.containers.get(box.container).get_archive(path)
                with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
                    data = archive.extractfile(archive.next()).read()
                parts.append(_part(boundary, "file", path, "application/octet-stream", data))
            except docker.errors.NotFound:
                error = json.dumps({"message": f"{path}: not found", "statusCode": 404}).encode()
                parts.append(_part(boundary, "error", path, "application/json", error))
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        return Response(body, media_type=f"multipart/form-data; boundary={boundary}")

    def close(self) -> None:
        if self._engine is None:
            return
        remove_containers(self.engine, LABEL)
        for snapshot in self.snapshots.values():
            try:
                if snapshot["image"]:
                    self.engine.images.remove(snapshot["image"], force=True)
            except docker.errors.APIError:
                pass


class _Auth:
    """Every request but object storage's must carry the API key as a bearer token."""

    def __init__(self, app, double: DaytonaDouble) -> None:
        self.app, self.double = app, double

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            self.double.requests.append((scope["method"], scope["path"]))
            headers = dict(scope["headers"])
            if not scope["path"].startswith("/s3/") and headers.get(b"authorization") != f"Bearer {API_KEY}".encode():
                await JSONResponse({"message": "Unauthorized", "statusCode": 401}, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _sync_body(request: Request) -> bytes:
    """The body of a request handled in a worker thread (sync endpoints)."""
    import anyio.from_thread

    return anyio.from_thread.run(request.body)


def _collect(api, command: _Command) -> None:
    """Read the exec's output until it ends, then record its exit code (137 when its sandbox went)."""
    from docker.utils.socket import frames_iter

    try:
        for stream, chunk in frames_iter(command.sock, tty=False):
            (command.stdout if stream == 1 else command.stderr).extend(chunk)
    except (OSError, ValueError):
        pass
    try:
        while (info := api.exec_inspect(command.exec_id))["Running"]:
            time.sleep(0.02)
        command.exit_code = int(info["ExitCode"])
    except docker.errors.APIError:
        command.exit_code = 137
    command.close()
    command.done.set()


def _part(boundary: str, name: str, source: str, content_type: str, data: bytes) -> bytes:
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{source}\"\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(data)}\r\n\r\n")
    return head.encode() + data + b"\r\n"


def _missing(what: str) -> Response:
    return JSONResponse({"message": f"{what} not found", "statusCode": 404}, status_code=404)


@dataclass
class Served:
    double: DaytonaDouble
    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def env(self) -> dict[str, str]:
        """What a BenchFlow process needs to use this double as its Daytona."""
        return {"DAYTONA_API_URL": f"{self.url}/api", "DAYTONA_API_KEY": API_KEY}

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.double.close()


def serve() -> Served:
    """Start the double on a free loopback port in a thread of this process."""
    double = DaytonaDouble()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    double.base = f"http://127.0.0.1:{port}"
    server = uvicorn.Server(uvicorn.Config(double.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the Daytona double did not start")
        time.sleep(0.01)
    return Served(double, double.base, server, thread)
