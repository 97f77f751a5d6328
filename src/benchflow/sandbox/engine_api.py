"""A small Docker Engine API client: the calls of a trial, over ``http.client``.

Why not the Docker SDK for these: importing it (requests, urllib3, charset detection, ...)
costs a ``bench run`` about 0.1 s before its first container can start, and each of its calls
goes through several layers of Python. A trial needs a dozen endpoints; they are here, on
kept-alive connections to the engine (``unix://``, ``tcp://`` with TLS, ``ssh://``: :mod:`.engine_transport`). Anything else
a rarer path asks for (builds, pulls, compose volumes) goes to the SDK's
``APIClient`` for the same engine, made on first use; its errors are turned into this
module's, so callers catch one family (:class:`EngineError`, :class:`NotFound`,
:class:`ImageNotFound`).

Hijacked streams (exec start, attach) are read through the buffered reader that parsed the
response headers: frames the engine writes right behind the headers arrive in the same read
and would be lost if read from the bare socket (:mod:`.engine_stream`).
"""

from __future__ import annotations

import base64
import functools
import http.client
import json
import os
import select
import threading
from collections.abc import Iterator
from urllib.parse import quote, urlencode

from .engine_transport import DEFAULT_SOCKET, connection_factory


class EngineError(Exception):
    """The engine answered with an error status (or could not be reached). Not a BenchError: like the
    Docker SDK's APIError it replaces, callers translate it; a trial classifies it as unexpected
    (``jobs.trial.unexpected_category``), which a SandboxError would change."""

    def __init__(self, status_code: int | None, explanation: str) -> None:
        super().__init__(f"{status_code} {explanation}" if status_code else explanation)
        self.status_code = status_code
        self.explanation = explanation


class NotFound(EngineError):
    """404: no such container, exec, path or image."""


class ImageNotFound(NotFound):
    """404 about an image."""


class EngineUnreachable(EngineError, ConnectionError):
    """The engine could not be reached, or the connection broke mid-call (a ``ConnectionError``:
    the trial is an infrastructure failure, retried)."""


_TRANSPORT = (OSError, http.client.HTTPException)


def _error(status: int, body: bytes) -> EngineError:
    try:
        explanation = json.loads(body)["message"]
    except (ValueError, KeyError, TypeError):
        explanation = body.decode("utf-8", "replace").strip()
    if status != 404:
        return EngineError(status, explanation)
    lowered = explanation.lower()
    image = "no such image" in lowered or "not found: does not exist or no pull access" in lowered \
        or "repository does not exist" in lowered or "image not known" in lowered
    return (ImageNotFound if image else NotFound)(status, explanation)


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """An idle kept-alive connection the engine has closed (readable at rest means EOF)."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


class EngineClient:
    """One engine's API; thread-safe (each call takes a connection from a small idle pool)."""

    def __init__(self, url: str | None = None, *, timeout: float = 120, version: str | None = None,
                 sdk=None) -> None:
        self.url = url or os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET
        self.timeout = timeout
        self._connect = connection_factory(self.url, timeout)
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._sdk_factory = sdk
        self._sdk = None
        self._prefix = f"/v{version}" if version else None

    # -- transport ---------------------------------------------------------------------------

    def _path(self, path: str, params: dict | None = None, versioned: bool = True) -> str:
        if versioned and self._prefix is None:
            found = self.version(api_version=False).get("ApiVersion")
            self._prefix = f"/v{found}" if found else ""
        full = (self._prefix if versioned else "") + path
        query = {k: v for k, v in (params or {}).items() if v is not None}
        return f"{full}?{urlencode(query)}" if query else full

    def _take(self) -> http.client.HTTPConnection:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not _dropped(conn):
                    return conn
                conn.close()
        return self._connect()

    def _give(self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        if response.will_close or len(self._idle) >= 32:
            conn.close()
            return
        with self._lock:
            self._idle.append(conn)

    def _send(self, method: str, path: str, body=None, headers: dict | None = None):
        """(connection, response) with the body unread."""
        conn = self._take()
        try:
            conn.request(method, path, body=body, headers=headers or {})
            return conn, conn.getresponse()
        except _TRANSPORT as exc:
            conn.close()
            raise self._unreachable(exc) from exc
        except BaseException:
            conn.close()
            raise

    def _unreachable(self, exc: BaseException) -> EngineUnreachable:
        return EngineUnreachable(None, f"the Docker engine at {self.url}: {type(exc).__name__}: {exc}")

    def _call(self, method: str, path: str, *, params: dict | None = None, json_body=None, body=None,
              headers: dict | None = None, versioned: bool = True) -> tuple[int, bytes, http.client.HTTPResponse]:
        headers = dict(headers or {})
        if json_body is not None:
            body = json.dumps({k: v for k, v in json_body.items() if v is not None}).encode()
            headers["Content-Type"] = "application/json"
        conn, response = self._send(method, self._path(path, params, versioned), body, headers)
        try:
            data = response.read()
        except BaseException as exc:
            conn.close()
            if isinstance(exc, _TRANSPORT):
                raise self._unreachable(exc) from exc
            raise
        self._give(conn, response)
        if response.status >= 400:
            raise _error(response.status, data)
        return response.status, data, response

    def _json(self, method: str, path: str, **kwargs):
        _, data, _ = self._call(method, path, **kwargs)
        return json.loads(data) if data else None

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        if self._sdk is not None:
            self._sdk.close()

    # -- the calls of a trial ------------------------------------------------------------------

    def version(self, api_version: bool = True) -> dict:
        return self._json("GET", "/version", versioned=api_version)

    def info(self) -> dict:
        return self._json("GET", "/info")

    def networks(self) -> list[dict]:
        return self._json("GET", "/networks")

    def inspect_image(self, image: str) -> dict:
        return self._json("GET", f"/images/{quote(image, safe='/:@')}/json")

    def inspect_container(self, container: str) -> dict:
        return self._json("GET", f"/containers/{container}/json")

    def create(self, config: dict, name: str | None = None) -> dict:
        """POST /containers/create with ``config`` as the engine reads it (see :func:`container_config`)."""
        return self._json("POST", "/containers/create", params={"name": name}, json_body=config)

    def start(self, container: str) -> None:
        self._call("POST", f"/containers/{container}/start")

    def remove_container(self, container: str, force: bool = False, v: bool = False) -> None:
        self._call("DELETE", f"/containers/{container}",
                   params={"force": "true" if force else "false", "v": "true" if v else "false"})

    def remove_container_unawaited(self, container: str):
        """Send a force-remove of ``container`` and return once it is sent, before the engine answers:
        dockerd and podman finish a removal whose client has hung up, so the caller's process may
        exit first. Returns a function that waits for the answer (raises :class:`EngineError`; a
        container already gone is no error).
        """
        conn = self._connect()
        try:
            conn.request("DELETE", self._path(f"/containers/{container}", {"force": "true", "v": "true"}))
        except BaseException as exc:
            conn.close()
            if isinstance(exc, _TRANSPORT):
                raise self._unreachable(exc) from exc
            raise

        def answer() -> None:
            try:
                response = conn.getresponse()
                data = response.read()
            except _TRANSPORT as exc:
                raise self._unreachable(exc) from exc
            finally:
                conn.close()
            if response.status >= 400 and response.status != 404:
                raise _error(response.status, data)
        return answer

    def containers(self, all: bool = False, filters: dict | None = None) -> list[dict]:
        return self._json("GET", "/containers/json", params={"all": "1" if all else "0",
                                                              "filters": _filters(filters)})

    def images(self, all: bool = False, filters: dict | None = None) -> list[dict]:
        return self._json("GET", "/images/json", params={"all": "1" if all else "0", "filters": _filters(filters)})

    def remove_image(self, image: str, force: bool = False) -> None:
        self._call("DELETE", f"/images/{quote(image, safe='/:@')}", params={"force": "true" if force else "false"})

    def commit(self, container: str, repository: str, tag: str, conf: dict | None = None, pause: bool = True) -> dict:
        """``docker commit``: an image of the container (``conf``: config changes, e.g. its labels)."""
        return self._json("POST", "/commit", params={"container": container, "repo": repository, "tag": tag,
                                                     "pause": "true" if pause else "false"}, json_body=conf or {})

    def volumes(self, filters: dict | None = None) -> dict:
        return self._json("GET", "/volumes", params={"filters": _filters(filters)})

    def create_volume(self, name: str, labels: dict[str, str] | None = None) -> dict:
        return self._json("POST", "/volumes/create", json_body={"Name": name, "Labels": labels})

    def remove_volume(self, name: str, force: bool = False) -> None:
        self._call("DELETE", f"/volumes/{name}", params={"force": "true" if force else "false"})

    def put_archive(self, container: str, path: str, data) -> bool:
        status, _, _ = self._call("PUT", f"/containers/{container}/archive", params={"path": path}, body=data,
                                  headers={"Content-Type": "application/x-tar"})
        return status == 200

    def get_archive(self, container: str, path: str, chunk_size: int = 1 << 20) -> tuple[Iterator[bytes], dict]:
        """(the tar stream's chunks, the path's stat); read the chunks to the end or close them."""
        conn, response = self._send("GET", self._path(f"/containers/{container}/archive", {"path": path}))
        if response.status >= 400:
            data = response.read()
            self._give(conn, response)
            raise _error(response.status, data)
        stat = json.loads(base64.b64decode(response.getheader("X-Docker-Container-Path-Stat") or "e30="))

        def chunks() -> Iterator[bytes]:
            done = False
            try:
                while True:
                    chunk = response.read(chunk_size)
                    if not chunk:
                        done = True
                        return
                    yield chunk
            finally:
                if done:
                    self._give(conn, response)
                else:
                    conn.close()

        return chunks(), stat

    def exec_create(self, container: str, cmd: list[str], *, stdin: bool = False, stdout: bool = True,
                    stderr: bool = True, user: str = "", environment: list[str] | None = None,
                    workdir: str | None = None) -> dict:
        return self._json("POST", f"/containers/{container}/exec", json_body={
            "User": user, "Privileged": False, "Tty": False, "AttachStdin": stdin, "AttachStdout": stdout,
            "AttachStderr": stderr, "Cmd": cmd, "Env": environment, "WorkingDir": workdir})

    def update_pids_limit(self, container: str, limit: int) -> None:
        """Set the running container's pids limit (its cgroup's ``pids.max``). Docker takes
        ``POST /containers/{id}/update``; Podman's compatible API has no such route (a bare 404),
        so its own ``/libpod/containers/{id}/update`` takes the limit in OCI resource form."""
        try:
            self._call("POST", f"/containers/{container}/update", json_body={"PidsLimit": limit})
        except NotFound as exc:
            if "no such container" in exc.explanation.lower():
                raise
            self._call("POST", f"/libpod/containers/{container}/update", json_body={"pids": {"limit": limit}})

    def exec_inspect(self, exec_id: str) -> dict:
        return self._json("GET", f"/exec/{exec_id}/json")

    def exec_start(self, exec_id: str) -> bytes:
        """Run a created exec to its end; its stdout and stderr, in order."""
        from .engine_stream import exec_stream

        stream = exec_stream(self, exec_id)
        try:
            return b"".join(chunk for _, chunk in stream.frames())
        finally:
            stream.close()

    def hijack(self, path: str, *, params: dict | None = None, json_body: dict | None = None):
        """POST ``path`` asking to take the connection over: (socket, its buffered reader) after
        the response headers, which were read through that reader."""
        body = json.dumps(json_body or {}).encode()
        conn = self._connect()
        try:
            conn.request("POST", self._path(path, params), body=body,
                         headers={"Content-Type": "application/json", "Connection": "Upgrade", "Upgrade": "tcp"})
            sock = conn.sock  # kept: http.client lets go of it when the response says it closes
            response = conn.getresponse()
            if response.status >= 400:
                raise _error(response.status, response.read())
        except BaseException as exc:
            conn.close()
            if isinstance(exc, _TRANSPORT):
                raise self._unreachable(exc) from exc
            raise
        return HijackedResponse(conn, sock, response)

    # -- everything else: the SDK ---------------------------------------------------------------

    def __getattr__(self, name: str):
        if name.startswith("__") or self.__dict__.get("_sdk_factory") is None:
            raise AttributeError(name)
        if self._sdk is None:
            with self._lock:
                if self._sdk is None:
                    self._sdk = self._sdk_factory()
        target = getattr(self._sdk, name)
        return _translated(target) if callable(target) else target


class HijackedResponse:
    """A taken-over connection: ``sock`` to write and half-close, ``reader`` to read."""

    def __init__(self, conn: http.client.HTTPConnection, sock, response: http.client.HTTPResponse) -> None:
        self.conn, self.sock, self.response = conn, sock, response
        self.reader = response.fp

    def close(self) -> None:
        for target in (self.conn, self.reader, self.sock):
            try:
                target.close()
            except (OSError, ValueError, AttributeError):  # closed already, or its socket is gone
                pass


def _translated(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        from docker.errors import APIError, DockerException
        from docker.errors import ImageNotFound as SdkImageNotFound
        from docker.errors import NotFound as SdkNotFound

        try:
            return fn(*args, **kwargs)
        except APIError as exc:
            cls = ImageNotFound if isinstance(exc, SdkImageNotFound) else NotFound if isinstance(exc, SdkNotFound) \
                else EngineError
            raise cls(exc.status_code, exc.explanation or str(exc)) from exc
        except DockerException as exc:
            raise EngineError(None, str(exc)) from exc
    return call


def _filters(filters: dict | None) -> str | None:
    if not filters:
        return None
    return json.dumps({key: [str(v) for v in (value if isinstance(value, list) else [value])]
                       for key, value in filters.items()})


def container_config(image: str, *, command: list[str], entrypoint: list[str] | None, user: str,
                     working_dir: str, environment: dict[str, str], labels: dict[str, str],
                     host_config: dict, stdin_open: bool = False) -> dict:
    """The body of a container create, as the SDK's ``create_container`` would send it."""
    return {"Image": image, "Cmd": command, "Entrypoint": entrypoint, "User": user, "WorkingDir": working_dir,
            "Env": [f"{k}={v}" for k, v in environment.items()] or None, "Labels": labels, "Tty": False,
            "OpenStdin": stdin_open, "StdinOnce": stdin_open, "AttachStdin": stdin_open, "AttachStdout": True,
            "AttachStderr": True, "HostConfig": host_config}


def host_config(*, init: bool, network_mode: str, nano_cpus: int, memory_bytes: int,
                binds: dict[str, str] | None = None, runtime: str | None = None, security_opt: list[str],
                cap_drop: list[str], cap_add: list[str], pids_limit: int | None,
                extra_hosts: dict[str, str] | None = None, mounts: list[dict] | None = None) -> dict:
    """A container's ``HostConfig``; ``binds``: host path -> read-only path inside."""
    config = {"Init": init, "NetworkMode": network_mode, "NanoCpus": nano_cpus, "Memory": memory_bytes,
              "SecurityOpt": security_opt, "CapDrop": cap_drop, "CapAdd": cap_add, "PidsLimit": pids_limit,
              "Binds": [f"{host}:{inside}:ro" for host, inside in (binds or {}).items()] or None,
              "Runtime": runtime, "ExtraHosts": [f"{k}:{v}" for k, v in (extra_hosts or {}).items()] or None,
              "Mounts": [dict(m) for m in mounts] if mounts else None}
    return {k: v for k, v in config.items() if v is not None}
