"""A test double of Amazon Bedrock AgentCore Runtime, the ECR API and an ECR registry, on one loopback port.

It speaks what botocore sends and parses, unpatched:

- ``bedrock-agentcore-control`` (rest-json): ``PUT /runtimes/`` CreateAgentRuntime,
  ``GET|DELETE /runtimes/{id}/``, ``POST /runtimes/`` ListAgentRuntimes (paged by
  ``nextToken``), ``GET /tags/{arn}`` ListTagsForResource; a runtime is ``CREATING``
  on its first Get and ``READY`` after, its image pulled from the registry below;
- ``bedrock-agentcore`` (rest-json, event-stream output): ``POST
  /runtimes/{arn}/commands`` InvokeAgentRuntimeCommand, answered as
  ``application/vnd.amazon.eventstream`` frames (contentStart, contentDelta
  stdout/stderr text, contentStop with exitCode and status); each runtime
  session (``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id``) is a container on the
  local Docker engine started from the runtime's image on its first command, and
  a command is an engine exec of ``timeout <timeout> /bin/sh -c <command>`` (``TIMED_OUT`` when it hit it);
- ``ecr`` (json 1.1, ``X-Amz-Target``): GetAuthorizationToken, CreateRepository
  (``RepositoryAlreadyExistsException`` when it exists), DescribeRepositories;
  repositories are ``127.0.0.1:<port>/<name>``, served by the Registry v2 double
  of :mod:`tests.doubles.agentcore_registry_double` (dockerd pushes to and pulls
  from a loopback registry without TLS).

Requests are not signature-checked (any credentials pass). Not doubled: VPC
networking (a ``VPC`` runtime is refused), versions and endpoints, InvokeAgentRuntime,
the interactive shell, ECR image scanning and lifecycle. Containers carry the label
``benchflow-agentcore-double=<pid>`` and ``stop()`` removes them and untags the pushed images.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import json
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import unquote

import docker
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.doubles.agentcore_registry_double import Registry, event
from tests.doubles.engine_cleanup import remove_containers

ACCOUNT = "123456789012"
REGION = "us-east-1"
LABEL = "benchflow-agentcore-double"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/benchflow-double"


@dataclass
class _Runtime:
    id: str
    arn: str
    request: dict
    tags: dict[str, str]
    created: float = field(default_factory=time.time)
    status: str = "CREATING"
    failure: str = ""
    sessions: dict[str, str] = field(default_factory=dict)
    """Runtime session id -> container id."""

    def summary(self) -> dict:
        return {"agentRuntimeArn": self.arn, "agentRuntimeId": self.id, "agentRuntimeVersion": "1",
                "agentRuntimeName": self.request["agentRuntimeName"],
                "description": self.request.get("description") or "-", "lastUpdatedAt": self.created,
                "status": self.status}


def _error(status: int, code: str, message: str, *, json11: bool = False) -> Response:
    body = {"__type": code, "message": message} if json11 else {"message": message}
    return JSONResponse(body, status_code=status, headers={"x-amzn-ErrorType": code})


class AgentCoreDouble:
    """See the module docstring."""

    def __init__(self) -> None:
        self.engine = docker.from_env(timeout=300)
        self.registry = Registry()
        self.runtimes: dict[str, _Runtime] = {}
        self.repositories: dict[str, dict] = {}
        self.requests: list[tuple[str, dict]] = []
        """(operation, request body) of each control-plane write, for tests of the mapping."""
        self.host = ""
        self._lock = threading.Lock()
        self.app = Starlette(routes=[
            Route("/runtimes/", self.runtimes_root, methods=["PUT", "POST"]),
            Route("/runtimes/{id}/", self.runtime, methods=["GET", "DELETE"]),
            Route("/runtimes/{arn:path}/commands", self.command, methods=["POST"]),
            Route("/tags/{arn:path}", self.tags, methods=["GET"]),
            Route("/", self.ecr, methods=["POST"]),
            *self.registry.routes])

    # -- control plane ---------------------------------------------------------------------------

    async def runtimes_root(self, request: Request) -> Response:
        body = json.loads(await request.body() or b"{}")
        if request.method == "POST":
            return self._list(request)
        self.requests.append(("CreateAgentRuntime", body))
        if body.get("networkConfiguration", {}).get("networkMode") != "PUBLIC":
            return _error(400, "ValidationException", "the double runs PUBLIC runtimes only")
        name = body["agentRuntimeName"]
        runtime_id = f"{name}-{secrets.token_hex(5)}"
        runtime = _Runtime(id=runtime_id, arn=f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/{runtime_id}",
                           request=body, tags=dict(body.get("tags") or {}))
        with self._lock:
            self.runtimes[runtime_id] = runtime
        return JSONResponse({"agentRuntimeArn": runtime.arn, "agentRuntimeId": runtime_id,
                             "agentRuntimeVersion": "1", "createdAt": runtime.created, "status": "CREATING"},
                            status_code=202)

    def _list(self, request: Request) -> Response:
        start = int(request.query_params.get("nextToken") or 0)
        size = int(request.query_params.get("maxResults") or 2)
        items = [r.summary() for r in sorted(self.runtimes.values(), key=lambda r: r.created)]
        page = {"agentRuntimes": items[start:start + size]}
        if start + size < len(items):
            page["nextToken"] = str(start + size)
        return JSONResponse(page)

    async def runtime(self, request: Request) -> Response:
        runtime = self.runtimes.get(request.path_params["id"])
        if runtime is None:
            return _error(404, "ResourceNotFoundException", "no such agent runtime")
        if request.method == "DELETE":
            self.requests.append(("DeleteAgentRuntime", {"agentRuntimeId": runtime.id}))
            with self._lock:
                self.runtimes.pop(runtime.id, None)
            await asyncio.to_thread(self._remove, runtime)
            return JSONResponse({"status": "DELETING", "agentRuntimeId": runtime.id, "agentRuntimeVersion": "1"},
                                status_code=202)
        if runtime.status == "CREATING":
            runtime.status = await asyncio.to_thread(self._pull, runtime)
        body = runtime.request
        return JSONResponse({**runtime.summary(), "createdAt": runtime.created, "roleArn": body["roleArn"],
                             "networkConfiguration": body["networkConfiguration"],
                             "lifecycleConfiguration": body.get("lifecycleConfiguration") or {},
                             "agentRuntimeArtifact": body["agentRuntimeArtifact"],
                             "environmentVariables": body.get("environmentVariables") or {},
                             **({"failureReason": runtime.failure} if runtime.status.endswith("FAILED") else {})})

    def _pull(self, runtime: _Runtime) -> str:
        """AgentCore pulls the image from ECR when the runtime is made: so does the double."""
        uri = runtime.request["agentRuntimeArtifact"]["containerConfiguration"]["containerUri"]
        repository, _, tag = uri.rpartition(":")
        try:
            self.engine.api.pull(repository, tag=tag)
        except docker.errors.APIError as exc:
            runtime.failure = f"image {uri} cannot be pulled: {exc}"
            return "CREATE_FAILED"
        return "READY"

    async def tags(self, request: Request) -> Response:
        arn = unquote(request.path_params["arn"])
        runtime = next((r for r in self.runtimes.values() if r.arn == arn), None)
        if runtime is None:
            return _error(404, "ResourceNotFoundException", f"no resource {arn}")
        return JSONResponse({"tags": runtime.tags})

    # -- data plane ------------------------------------------------------------------------------

    async def command(self, request: Request) -> Response:
        arn = unquote(request.path_params["arn"])
        runtime = next((r for r in self.runtimes.values() if r.arn == arn), None)
        if runtime is None or runtime.status != "READY":
            return _error(404, "ResourceNotFoundException", f"no ready agent runtime {arn}")
        session = request.headers.get("x-amzn-bedrock-agentcore-runtime-session-id") or secrets.token_hex(20)
        body = json.loads(await request.body())
        container = await asyncio.to_thread(self._session, runtime, session)
        if container is None:
            return _error(404, "ResourceNotFoundException", f"agent runtime {arn} was deleted")
        return StreamingResponse(self._run(container, body["command"], int(body.get("timeout") or 300)),
                                 media_type="application/vnd.amazon.eventstream",
                                 headers={"X-Amzn-Bedrock-AgentCore-Runtime-Session-Id": session})

    def _session(self, runtime: _Runtime, session: str) -> str | None:
        """The session's container, started on its first command; None once the runtime is deleted."""
        with self._lock:
            if runtime.id not in self.runtimes:
                return None
            found = runtime.sessions.get(session)
            if found is None:
                uri = runtime.request["agentRuntimeArtifact"]["containerConfiguration"]["containerUri"]
                made = self.engine.containers.run(uri, detach=True, labels={LABEL: str(os.getpid())},
                                                  environment=runtime.request.get("environmentVariables") or {})
                found = runtime.sessions[session] = made.id
        return found

    def _run(self, container: str, command: str, timeout: int):
        api = self.engine.api
        began = time.monotonic()
        exec_id = api.exec_create(container, ["timeout", str(timeout), "/bin/sh", "-c", command])["Id"]
        yield event("chunk", json.dumps({"contentStart": {}}).encode())
        decoders = {"stdout": codecs.getincrementaldecoder("utf-8")("replace"),
                    "stderr": codecs.getincrementaldecoder("utf-8")("replace")}
        for out, err in api.exec_start(exec_id, stream=True, demux=True):
            delta = {name: decoders[name].decode(data) for name, data in (("stdout", out), ("stderr", err)) if data}
            if any(delta.values()):
                yield event("chunk", json.dumps({"contentDelta": delta}).encode())
        code = api.exec_inspect(exec_id).get("ExitCode") or 0
        late = code == 124 and time.monotonic() - began >= timeout - 0.5
        yield event("chunk", json.dumps({"contentStop": {"exitCode": code,
                                                         "status": "TIMED_OUT" if late else "COMPLETED"}}).encode())

    # -- ECR -------------------------------------------------------------------------------------

    async def ecr(self, request: Request) -> Response:
        target = request.headers.get("x-amz-target", "").rpartition(".")[2]
        body = json.loads(await request.body() or b"{}")
        if target == "GetAuthorizationToken":
            token = base64.b64encode(b"AWS:double-registry-password").decode()
            return JSONResponse({"authorizationData": [{"authorizationToken": token, "expiresAt": time.time() + 43200,
                                                        "proxyEndpoint": f"http://{self.host}"}]},
                                media_type="application/x-amz-json-1.1")
        if target == "CreateRepository":
            name = body["repositoryName"]
            if name in self.repositories:
                return _error(400, "RepositoryAlreadyExistsException", f"{name} exists", json11=True)
            self.repositories[name] = {"repositoryName": name, "registryId": ACCOUNT,
                                       "repositoryArn": f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{name}",
                                       "repositoryUri": f"{self.host}/{name}", "createdAt": time.time(),
                                       "tags": body.get("tags") or []}
            return JSONResponse({"repository": self.repositories[name]})
        if target == "DescribeRepositories":
            names = body.get("repositoryNames") or list(self.repositories)
            missing = [n for n in names if n not in self.repositories]
            if missing:
                return _error(400, "RepositoryNotFoundException", f"{missing[0]} not found", json11=True)
            return JSONResponse({"repositories": [self.repositories[n] for n in names]})
        return _error(400, "UnknownOperationException", target, json11=True)

    # -- housekeeping ----------------------------------------------------------------------------

    def _remove(self, runtime: _Runtime) -> None:
        for container in runtime.sessions.values():
            try:
                self.engine.api.remove_container(container, force=True)
            except docker.errors.NotFound:
                pass

    def close(self) -> None:
        """Remove the sessions' containers and the engine's tags of this registry's images (the images stay)."""
        remove_containers(self.engine, LABEL)
        for image in self.engine.api.images():
            for tag in image.get("RepoTags") or []:
                if tag.startswith(self.host + "/"):
                    with contextlib.suppress(docker.errors.APIError):
                        self.engine.api.remove_image(tag)



@dataclass
class Served:
    double: AgentCoreDouble
    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def env(self) -> dict[str, str]:
        """What a BenchFlow process needs to use this double as AgentCore (dummy AWS credentials)."""
        return {"BENCHFLOW_AGENTCORE_CONTROL_ENDPOINT_URL": self.url, "BENCHFLOW_AGENTCORE_ENDPOINT_URL": self.url,
                "BENCHFLOW_AGENTCORE_ECR_ENDPOINT_URL": self.url, "BENCHFLOW_AGENTCORE_ROLE_ARN": ROLE,
                "AWS_REGION": REGION, "AWS_ACCESS_KEY_ID": "AKIADOUBLE", "AWS_SECRET_ACCESS_KEY": "double-secret"}

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.double.close()


def serve() -> Served:
    """Start the double on a free loopback port in a thread of this process."""
    double = AgentCoreDouble()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    double.host = f"127.0.0.1:{port}"
    server = uvicorn.Server(uvicorn.Config(double.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    return Served(double=double, url=f"http://{double.host}", server=server, thread=thread)


if __name__ == "__main__":  # a standalone double for manual runs: prints its environment
    served = serve()
    print(json.dumps(served.env()), flush=True)
    threading.Event().wait()
