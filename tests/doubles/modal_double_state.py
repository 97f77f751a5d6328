"""The state of the Modal double (:mod:`tests.doubles.modal_api_double`): images, sandboxes, secrets, mounts.

Both of the double's gRPC services (the control plane and the task command
router, :mod:`tests.doubles.modal_router_double`) share one :class:`State`.
Each image layer Modal would build is a ``docker build`` of the Dockerfile
commands the SDK sent (``FROM <tag>`` of a base layer resolved to that layer's
local image, the context from the build-context mount), cached by the
layer's definition as Modal caches builds; each sandbox is a container on the
local Docker engine labelled ``benchflow-modal-double=<pid>``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import secrets
import tarfile
import threading
import time
from dataclasses import dataclass, field

import docker
from grpclib import GRPCError, Status
from modal_proto import api_pb2

from tests.doubles.engine_cleanup import remove_containers

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
    part = lambda data: base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
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
        remove_containers(self.engine, LABEL)
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
