"""Connections to Docker engines and the ownership labels put on everything we create.

One :class:`.engine_api.EngineClient` per engine URL, shared by the whole process
(its connection pool is thread-safe; every blocking call runs in a worker
thread); the rarer calls it hands to the Docker SDK's ``APIClient``, made on first use.
The local engine comes from ``DOCKER_HOST`` (or the default socket); ``remote-docker`` reads
``BENCHFLOW_REMOTE_DOCKER_HOST`` (``ssh://``, ``tcp://`` with ``DOCKER_TLS_VERIFY``/``DOCKER_CERT_PATH``,
``unix://``).

Ownership labels name the owning process by host, pid and the pid's start
time, so ``bench sandbox cleanup`` can tell an orphan (owner gone, or the pid
reused by another process) from a container a live run still holds.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from benchflow.errors import SandboxUnavailable

from .engine_api import EngineClient

OWNED = "benchflow.owned"
KIND = "benchflow.kind"
JOB = "benchflow.job"
TRIAL = "benchflow.trial"
PID = "benchflow.pid"
PID_START = "benchflow.pid_start"
HOST = "benchflow.host"
CREATED = "benchflow.created"
TASK = "benchflow.task"
CACHE_KEY = "benchflow.cache_key"
BACKEND = "benchflow.backend"
"""The backend that made a container (two backends may share one engine)."""
KEPT = "benchflow.kept"
"""``true`` on a sandbox that outlives its run (``bench sandbox create``, or ``--keep-sandbox`` where the
labels can be changed afterwards): ``bench sandbox cleanup`` leaves it to ``release``."""

REMOTE_ENV = "BENCHFLOW_REMOTE_DOCKER_HOST"
PUBLIC_NETWORK_ENV = "BENCHFLOW_DOCKER_PUBLIC_NETWORK"
"""Set to ``host`` to give ``public`` tasks the host network on an engine without a bridge."""

API_TIMEOUT_SEC = 120

_clients: dict[str | None, object] = {}
_lock = threading.Lock()


def remote_url() -> str | None:
    """The remote engine URL from the environment, or None when unset."""
    return os.environ.get(REMOTE_ENV) or None


def client(url: str | None = None) -> EngineClient:
    """The shared engine client for ``url`` (None: the local engine from the environment).

    Raises:
        SandboxUnavailable: the URL cannot be used (bad scheme, missing TLS files).
    """
    with _lock:
        api = _clients.get(url)
        if api is None:
            try:
                api = EngineClient(url, timeout=API_TIMEOUT_SEC, version=_api_versions.get(_where(url)),
                                   sdk=functools.partial(_sdk, url))
            except (ValueError, OSError) as exc:
                raise SandboxUnavailable(f"Docker engine {url or 'from DOCKER_HOST'}: {exc}") from exc
            _clients[url] = api
        return api


def _sdk(url: str | None):
    """The Docker SDK's ``APIClient`` for ``url``: builds, pulls, compose volumes."""
    import docker
    from docker.errors import DockerException

    version = _api_versions.get(_where(url))  # known from ping(): no second version round trip
    try:
        if url is None:
            return docker.from_env(timeout=API_TIMEOUT_SEC, max_pool_size=32, version=version).api
        env = dict(os.environ, DOCKER_HOST=url)
        if url.startswith("ssh://"):
            return docker.APIClient(base_url=url, timeout=API_TIMEOUT_SEC, use_ssh_client=True,
                                    max_pool_size=32, version=version)
        return docker.from_env(environment=env, timeout=API_TIMEOUT_SEC, max_pool_size=32, version=version).api
    except DockerException as exc:
        raise SandboxUnavailable(f"Docker engine {url or 'from DOCKER_HOST'}: {exc}") from exc


_api_versions: dict[str | None, str] = {}
_answered: dict[str | None, str] = {}


def _where(url: str | None) -> str | None:
    return url or os.environ.get("DOCKER_HOST")


def ping(url: str | None = None, timeout: float = 5.0) -> tuple[bool, str]:
    """(answers, one-line reason) for the engine at ``url``; never raises.

    One round trip, once per process and address: an engine that answered is not asked again
    (a later failure shows on the call that meets it), and its API version is kept for
    :func:`client`.
    """
    key = _where(url)
    known = _answered.get(key)
    if known is not None:
        return True, known
    try:  # unversioned: the engine's own answer gives the version later calls use
        probe = EngineClient(url, timeout=timeout)
        try:
            version = probe.version(api_version=False)
        finally:
            probe.close()
    except Exception as exc:  # noqa: BLE001 - any failure means "does not answer"
        where = url or os.environ.get("DOCKER_HOST") or "the default socket"
        return False, f"no Docker engine answers at {where} ({type(exc).__name__}); run scripts/docker-engine.sh"
    if isinstance(version.get("ApiVersion"), str):
        _api_versions[key] = version["ApiVersion"]
    reason = _answered[key] = f"Docker engine {version.get('Version', '?')} (API {version.get('ApiVersion', '?')})"
    return True, reason


@dataclass(frozen=True)
class EngineFacts:
    has_bridge: bool
    """Whether the engine has the default ``bridge`` network (false with ``--bridge=none``)."""


_facts: dict[str | None, EngineFacts] = {}


def facts(url: str | None = None) -> EngineFacts:
    """What this engine offers, asked once per process."""
    known = _facts.get(url)
    if known is None:
        names = {net.get("Name") for net in client(url).networks()}
        known = _facts[url] = EngineFacts(has_bridge="bridge" in names)
    return known


def process_start_ticks(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def owner_labels(extra: dict[str, str] | None = None, *, kind: str = "sandbox") -> dict[str, str]:
    """Labels naming this process as the owner, merged over the caller's (job, trial, task)."""
    pid = os.getpid()
    labels = {key: str(value) for key, value in (extra or {}).items()}
    labels.update({
        OWNED: "true",
        KIND: kind,
        PID: str(pid),
        PID_START: process_start_ticks(pid) or "",
        HOST: socket.gethostname(),
        CREATED: datetime.now(UTC).isoformat(timespec="seconds"),
    })
    return labels


def owner_alive(labels: dict[str, str]) -> bool | None:
    """True when the owning process still runs, False when it is gone, None when unknown.

    Unknown means the labels name no owner, or the owner is on another host
    (a shared remote engine): such containers are governed by their age.
    """
    pid_text = labels.get(PID, "")
    if not pid_text.isdigit() or labels.get(HOST) != socket.gethostname():
        return None
    pid = int(pid_text)
    started = process_start_ticks(pid)
    if started is None:
        return False
    recorded = labels.get(PID_START)
    return not recorded or recorded == started


def created_at(labels: dict[str, str], fallback_epoch: float | None = None) -> float | None:
    """Creation time (epoch seconds) from the label, else the engine's timestamp."""
    text = labels.get(CREATED)
    if text:
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError:
            pass
    return fallback_epoch


POOL = ThreadPoolExecutor(max_workers=256, thread_name_prefix="benchflow-docker")
"""Worker threads for blocking engine calls and stream pumps: one long-lived exec_stream
holds a thread, so the small default executor would starve under concurrency."""


async def call(fn, /, *args, **kwargs):
    """Run the blocking ``fn(*args, **kwargs)`` in :data:`POOL` and await it."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(POOL, functools.partial(fn, *args, **kwargs))
