"""The ``docker`` backend (the local engine), ``remote-docker`` (``BENCHFLOW_REMOTE_DOCKER_HOST``),
``podman`` (Podman's Docker-compatible API, ``BENCHFLOW_PODMAN_HOST``) and ``docker+runsc``
(the local engine with gVisor's ``runsc`` runtime).

All make :class:`.docker.DockerSandbox` containers; what differs is the
engine, its OCI runtime and what it can do from here: a remote engine cannot
mount this host's folders; under gVisor (registered with ``--network=none``,
see ``scripts/setup.d/gvisor.sh``) a sandbox has loopback only and no pod of
services shares its network. Containers carry a ``benchflow.backend`` label, so a third backend on
the same engine (e.g. a subclass registered through an entry point) lists and
removes only its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from benchflow.errors import SandboxUnavailable

from .. import docker_engine as eng
from ..base import Backend, Capabilities, CacheStore, OwnedSandbox, SandboxSpec
from . import kept, leftovers
from .sandbox import DockerSandbox

DOCKER = "docker"
REMOTE_DOCKER = "remote-docker"
PODMAN = "podman"
GVISOR = "docker+runsc"
PODMAN_ENV = "BENCHFLOW_PODMAN_HOST"
PODMAN_SOCKET = "unix:///run/podman/podman.sock"
"""Where ``podman system service`` listens when run as root (``scripts/setup.d/podman.sh``)."""


class DockerBackend(Backend):
    """Sandboxes as containers on one Docker engine (see the module docstring)."""

    all_scope = "only the containers BenchFlow made (the engine's own listing, docker ps -a, shows the others)"

    def __init__(self, name: str, remote: bool, *, url_env: str = eng.REMOTE_ENV, default_url: str | None = None,
                 host_mounts: bool | None = None, runtime: str | None = None) -> None:
        self.name = name
        self.remote = remote
        """True: the engine is not the one of ``DOCKER_HOST`` but the one ``url_env`` names."""
        self.url_env = url_env
        self.default_url = default_url
        self.mounts_host = not remote if host_mounts is None else host_mounts
        self.runtime = runtime
        """The engine's OCI runtime every container of this backend runs on (None: the engine's default)."""
        self.unlabelled = name if remote else DOCKER
        """The backend that owns containers made before they carried a backend label."""

    def remote_url(self) -> str | None:
        """The engine's address: ``url_env``, else ``default_url``; set to "" it means no engine."""
        value = os.environ.get(self.url_env)
        return self.default_url if value is None else (value or None)

    def url(self) -> str | None:
        if not self.remote:
            return None
        url = self.remote_url()
        if url is None:
            raise SandboxUnavailable(f"--sandbox {self.name} needs {self.url_env} "
                                     "(ssh://user@host, tcp://host:2376 or unix:///path.sock)")
        return url

    def available(self) -> tuple[bool, str]:
        if self.remote and self.remote_url() is None:
            return False, f"{self.url_env} is not set"
        ok, reason = eng.ping(self.remote_url() if self.remote else None)
        if ok and self.runtime is not None:
            return runtime_available(self.remote_url() if self.remote else None, self.runtime, reason)
        return ok, reason

    def configured(self) -> bool:
        return self.remote and bool(os.environ.get(self.url_env))

    @property
    def capabilities(self) -> Capabilities:
        """What this backend delivers on this engine (asks the engine once; static when it is down)."""
        modes, fallbacks = {"no-network", "public", "allowlist"}, {}
        try:
            url = self.url()
            if not eng.facts(url).has_bridge and os.environ.get(eng.PUBLIC_NETWORK_ENV, "").lower() != "host":
                modes, fallbacks = {"no-network", "allowlist"}, {"public": "no-network"}
        except Exception:  # noqa: BLE001 - no engine: report the general capabilities
            pass
        if self.runtime == "runsc":  # gVisor's own network stack is off (--network=none): loopback only
            modes, fallbacks = {"no-network", "allowlist"}, {"public": "no-network"}
        return Capabilities(network_modes=frozenset(modes), network_fallbacks=fallbacks, snapshots=True,
                            retained_snapshots=True, host_mounts=self.mounts_host, image_layers=True, keep=True,
                            exec_writes_persist=True,
                            multi_service=self.runtime is None, start_from_snapshot=True)

    def create(self, spec: SandboxSpec, *, detached: bool = False) -> DockerSandbox:
        return DockerSandbox(spec, url=self.url(), capabilities=self.capabilities, backend=self.name,
                             detached=detached, runtime=self.runtime)

    def _place(self) -> str | None | bool:
        """The engine URL (None: the local engine), or False for a remote engine that is not set."""
        return (self.remote_url() or False) if self.remote else None

    def exists(self, sandbox_id: str) -> bool:
        place = self._place()
        return place is not False and leftovers.exists(place, sandbox_id)

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        """Its containers; none for ``remote-docker`` without a URL (there is nowhere to look)."""
        place = self._place()
        return [] if place is False else leftovers.list_owned(place, self.name, self.unlabelled, owner)

    def remove(self, ids: list[str]) -> dict[str, str]:
        return leftovers.remove(self.url(), ids)

    def stale_snapshots(self, owner: str | None = None) -> list[str]:
        place = self._place()
        return [] if place is False else leftovers.stale_snapshots(place, owner)

    def remove_snapshots(self, refs: list[str]) -> dict[str, str]:
        return leftovers.remove_images(self.url(), refs)

    @property
    def cache(self) -> CacheStore | None:
        from .cache import DockerCache

        place = self._place()
        return None if place is False else DockerCache(place)

    @property
    def no_cache_reason(self) -> str:
        return f"keeps no cache: {self.url_env} is not set (no engine to look at)"

    def image_status(self, ref: str, *, pull: bool = True) -> tuple[bool | None, str]:
        """On the engine, or pulled now (asked once per process)."""
        from .resources import image_status

        return image_status(self.url(), ref, pull=pull)

    def host_resources(self) -> tuple[float | None, int | None]:
        """The engine machine's CPUs and memory: the most a container can be given."""
        from .resources import engine_resources

        return engine_resources(self.url())

    def set_build_concurrency(self, n: int) -> None:
        from ..docker_build import set_build_concurrency

        set_build_concurrency(n)

    async def create_kept(self, spec: SandboxSpec) -> dict[str, object]:
        return await kept.create_kept(self.create(spec, detached=True))

    def attach(self, record: Mapping[str, object], command: list[str]) -> int:
        return kept.attach(record, command)

    def release(self, record: Mapping[str, object]) -> None:
        kept.release(record)


def runtime_available(url: str | None, runtime: str, engine: str) -> tuple[bool, str]:
    """(the engine at ``url`` lists the OCI runtime ``runtime``, a one-line reason). Never raises."""
    try:
        runtimes = eng.client(url).info().get("Runtimes") or {}
    except Exception as exc:  # noqa: BLE001 - any failure means "cannot tell": not available
        return False, f"{engine}: its runtimes cannot be listed ({type(exc).__name__})"
    if runtime not in runtimes:
        return False, (f"{engine} has no {runtime!r} runtime (it has {', '.join(sorted(runtimes)) or 'none'}); "
                       f"register it: scripts/setup.d/gvisor.sh")
    return True, f"{engine}, runtime {runtime}"


BACKEND = DockerBackend(DOCKER, remote=False)
REMOTE_BACKEND = DockerBackend(REMOTE_DOCKER, remote=True)
PODMAN_BACKEND = DockerBackend(PODMAN, remote=True, url_env=PODMAN_ENV, default_url=PODMAN_SOCKET, host_mounts=True)
"""Podman's Docker-compatible API on this machine: the same containers as ``docker``."""
GVISOR_BACKEND = DockerBackend(GVISOR, remote=False, runtime="runsc")
"""The local engine, every sandbox on gVisor: a user-space kernel between the agent and the host's."""
