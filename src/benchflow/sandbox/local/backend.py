"""The ``local`` backend: sandboxes of :mod:`.local.sandbox` on this machine, no daemon.

Its capabilities and availability probe are :mod:`.local.probe`'s, its leftovers
(state folders under ``<cache>/local/sandboxes``) :mod:`.local.leftovers`', its
``bench cache`` store :mod:`.local.cache`'s.
"""

from __future__ import annotations

from benchflow.sandbox.base import Backend, OwnedSandbox, SandboxSpec
from benchflow.sandbox.local import leftovers as local_leftovers
from benchflow.sandbox.local import probe as local_probe
from benchflow.sandbox.local.cache import LocalCache
from benchflow.sandbox.local.sandbox import CAPABILITIES, LocalSandbox


class LocalBackend(Backend):
    name = "local"
    no_keep_reason = "a local sandbox is namespaces of a BenchFlow process and ends with that process"
    all_scope = "only BenchFlow's: every local sandbox is a process BenchFlow started"
    capabilities = CAPABILITIES

    def available(self) -> tuple[bool, str]:
        return local_probe.probe(CAPABILITIES)

    def create(self, spec: SandboxSpec) -> LocalSandbox:
        return LocalSandbox(spec)

    def exists(self, sandbox_id: str) -> bool:
        return local_leftovers.exists(sandbox_id)

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        return local_leftovers.list_owned(self.name, owner)

    def remove(self, ids: list[str]) -> dict[str, str]:
        return local_leftovers.remove(ids)

    @property
    def cache(self) -> LocalCache:
        return LocalCache()


BACKEND = LocalBackend()
