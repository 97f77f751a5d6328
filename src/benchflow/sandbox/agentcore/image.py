"""The image an AgentCore runtime runs: the task's image built here, given AgentCore's health contract, in ECR.

AgentCore runs only images from ECR, and a runtime's container must answer
``GET /ping`` on port 8080 (its HTTP service contract) for a session to start.
So the task's image is built on the local Docker engine exactly as the docker
backend builds it (:func:`.docker_build.build_image`, cached by the task's
digest), then one layer is added on top: a tiny ``python3`` HTTP server on 8080
as the entrypoint (a task image without ``python3`` runs ``sleep``, and AgentCore
will not find it healthy). That image is tagged into the ECR repository
``benchflow/<task>`` (created if missing, tagged ``benchflow.owned``) and pushed
with the registry credentials of ``ecr:GetAuthorizationToken``, handed to the
engine in the push request only (never ``docker login``, never on disk).

A task whose pinned image is already an ECR URI is run as it is (it must serve
the contract itself). Builds are for the local engine's architecture: AWS's
AgentCore runs ARM64 images, so from an x86 machine point ``DOCKER_HOST`` at an
ARM64 engine.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import tempfile
import weakref
from pathlib import Path

from benchflow.errors import BuildError

from .. import docker_engine as eng
from ..base import SandboxSpec
from ..docker_build import build_image
from ..docker_engine import call, client

ECR_URI = re.compile(r"^(\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?|public\.ecr\.aws)/")
PING_PATH = "/opt/benchflow/agentcore_ping.py"
PING_SERVER = '''"""AgentCore's service contract for a BenchFlow sandbox: /ping is healthy, /invocations is refused."""
import http.server


class Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._answer(200, b'{"status": "Healthy"}')

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(400, b'{"error": "a BenchFlow sandbox runs commands only"}')

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("0.0.0.0", 8080), Handler).serve_forever()
'''
ENTRYPOINT = (f'command -v python3 >/dev/null 2>&1 && exec python3 {PING_PATH}; exec sleep 2147483647')
_pushed: set[str] = set()
_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def repository_name(spec: SandboxSpec) -> str:
    """``benchflow/<task>`` in ECR's alphabet (lower case, ``[a-z0-9._-]``)."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", spec.name.lower()).strip("._-")[:100] or "task"
    return f"benchflow/{slug}"


def wrapper_dockerfile(base: str) -> str:
    return (f"FROM {base}\nCOPY agentcore_ping.py {PING_PATH}\n"
            f'ENTRYPOINT ["/bin/sh", "-c", "{ENTRYPOINT}"]\nCMD []\n')


def _labels(spec: SandboxSpec, key: str) -> dict[str, str]:
    """The labels the docker backend writes on an image it built (so ``bench cache`` lists it)."""
    extra = {eng.TASK: spec.name, **spec.labels, eng.BACKEND: "agentcore"}
    return eng.owner_labels(extra, kind="image") | {eng.CACHE_KEY: key}


async def container_uri(spec: SandboxSpec) -> str:
    """The ECR URI of the image for ``spec``, built and pushed when needed.

    Raises:
        BuildError: the build, the ECR calls or the push failed.
    """
    if spec.image and ECR_URI.match(spec.image):
        return spec.image
    api = client()
    base = spec.image
    if base is None:
        base = (await build_image(api, spec, _labels(spec, spec.cache_key))).tag
    with tempfile.TemporaryDirectory() as folder:
        context = Path(folder)
        text = wrapper_dockerfile(base)
        (context / "Dockerfile").write_text(text)
        (context / "agentcore_ping.py").write_text(PING_SERVER)
        digest = hashlib.sha256(f"{base}\n{text}\n{PING_SERVER}".encode()).hexdigest()[:24]
        wrapper = SandboxSpec(name=f"{spec.name}-agentcore", environment_dir=context, cache_key=digest,
                              build_timeout_sec=spec.build_timeout_sec, build_network=spec.build_network)
        local = (await build_image(api, wrapper, _labels(spec, digest))).tag
    repository, token = await asyncio.to_thread(_repository, repository_name(spec))
    target = f"{repository}:{digest}"
    lock = _locks.setdefault(asyncio.get_running_loop(), {}).setdefault(target, asyncio.Lock())
    async with lock:
        if target not in _pushed:
            await call(_push, api, local, repository, digest, token)
            _pushed.add(target)
    return target


def _repository(name: str) -> tuple[str, dict[str, str]]:
    """(repository URI, registry credentials for the engine), the repository created if missing."""
    from .backend import client as aws

    ecr = aws("ecr")
    try:
        try:
            made = ecr.create_repository(repositoryName=name, tags=[
                {"Key": "benchflow.owned", "Value": "true"}, {"Key": "benchflow.backend", "Value": "agentcore"}])
            uri = made["repository"]["repositoryUri"]
        except ecr.exceptions.RepositoryAlreadyExistsException:
            uri = ecr.describe_repositories(repositoryNames=[name])["repositories"][0]["repositoryUri"]
        grant = ecr.get_authorization_token()["authorizationData"][0]
    except Exception as exc:
        raise BuildError(f"ECR repository {name}: {exc}") from exc
    user, _, password = base64.b64decode(grant["authorizationToken"]).decode().partition(":")
    return uri, {"username": user, "password": password, "serveraddress": grant["proxyEndpoint"]}


def _push(api, local: str, repository: str, tag: str, auth: dict[str, str]) -> None:
    api.tag(local, repository, tag)
    error = None
    for chunk in api.push(repository, tag=tag, auth_config=auth, stream=True, decode=True):
        error = chunk.get("error") or error
    if error:
        raise BuildError(f"pushing {repository}:{tag} to ECR failed: {error}")
