"""The ``docker`` backend (the local engine) and ``remote-docker`` (``BENCHFLOW_REMOTE_DOCKER_HOST``).

Both make :class:`.docker.DockerSandbox` containers; what differs is the
engine and what it can do from here: a remote engine cannot mount this host's
folders. Containers carry a ``benchflow.backend`` label, so a third backend on
the same engine (e.g. a subclass registered through an entry point) lists and
removes only its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from benchflow.errors import SandboxUnavailable

from . import docker_engine as eng
from . import docker_kept, docker_leftovers
from .base import Backend, Capabilities, CacheStore, OwnedSandbox, SandboxSpec
from .docker import DockerSandbox

DOCKER = "docker"
REMOTE_DOCKER = "remote-docker"


class DockerBackend(Backend):
    """Sandboxes as containers on one Docker engine (see the module docstring)."""

    def __init__(self, name: str, remote: bool) -> None:
        self.name = name
        self.remote = remote
        self.unlabelled = REMOTE_DOCKER if remote else DOCKER
        """The backend that owns containers made before they carried a backend label."""

    def url(self) -> str | None:
        if not self.remote:
            return None
        url = eng.remote_url()
        if url is None:
            raise SandboxUnavailable(f"--sandbox {self.name} needs {eng.REMOTE_ENV} "
                                     "(ssh://user@host, tcp://host:2376 or unix:///path.sock)")
        return url

    def available(self) -> tuple[bool, str]:
        if self.remote and eng.remote_url() is None:
            return False, f"{eng.REMOTE_ENV} is not set"
        return eng.ping(eng.remote_url() if self.remote else None)

    def configured(self) -> bool:
        return self.remote and eng.remote_url() is not None

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
        return Capabilities(network_modes=frozenset(modes), network_fallbacks=fallbacks, snapshots=True,
                            retained_snapshots=True, host_mounts=not self.remote, image_layers=True, keep=True,
                            multi_service=True)

    def create(self, spec: SandboxSpec, *, detached: bool = False) -> DockerSandbox:
        return DockerSandbox(spec, url=self.url(), capabilities=self.capabilities, backend=self.name,
                             detached=detached)

    def _place(self) -> str | None | bool:
        """The engine URL (None: the local engine), or False for a remote engine that is not set."""
        return (eng.remote_url() or False) if self.remote else None

    def exists(self, sandbox_id: str) -> bool:
        place = self._place()
        return place is not False and docker_leftovers.exists(place, sandbox_id)

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        """Its containers; none for ``remote-docker`` without a URL (there is nowhere to look)."""
        place = self._place()
        return [] if place is False else docker_leftovers.list_owned(place, self.name, self.unlabelled, owner)

    def remove(self, ids: list[str]) -> dict[str, str]:
        return docker_leftovers.remove(self.url(), ids)

    def stale_snapshots(self, owner: str | None = None) -> list[str]:
        place = self._place()
        return [] if place is False else docker_leftovers.stale_snapshots(place, owner)

    def remove_snapshots(self, refs: list[str]) -> dict[str, str]:
        return docker_leftovers.remove_images(self.url(), refs)

    @property
    def cache(self) -> CacheStore | None:
        from .docker_cache import DockerCache

        place = self._place()
        return None if place is False else DockerCache(place)

    def image_status(self, ref: str, *, pull: bool = True) -> tuple[bool | None, str]:
        """On the engine, or pulled now (asked once per process)."""
        from .docker_resources import image_status

        return image_status(self.url(), ref, pull=pull)

    def host_resources(self) -> tuple[float | None, int | None]:
        """The engine machine's CPUs and memory: the most a container can be given."""
        from .docker_resources import engine_resources

        return engine_resources(self.url())

    def set_build_concurrency(self, n: int) -> None:
        from .docker_build import set_build_concurrency

        set_build_concurrency(n)

    async def create_kept(self, spec: SandboxSpec) -> dict[str, object]:
        return await docker_kept.create_kept(self.create(spec, detached=True))

    def attach(self, record: Mapping[str, object], command: list[str]) -> int:
        return docker_kept.attach(record, command)

    def release(self, record: Mapping[str, object]) -> None:
        docker_kept.release(record)


BACKEND = DockerBackend(DOCKER, remote=False)
REMOTE_BACKEND = DockerBackend(REMOTE_DOCKER, remote=True)
