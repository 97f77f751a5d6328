"""The ``apple-container`` backend: each sandbox a Linux container in a lightweight VM of its own, made by
Apple's ``container`` CLI on macOS 26 (Apple silicon).

It works here when this is macOS, ``container`` is on PATH and ``container
system status`` answers (:mod:`.apple_container.cli`); otherwise it is
unavailable with that one-line reason and ``--sandbox apple-container`` is
refused before anything starts.

Every container carries the owner labels of the docker backend (``benchflow.owned``,
job, trial, task, owning pid and host) plus ``benchflow.backend=apple-container``,
so :meth:`AppleContainerBackend.leftovers` finds what a killed run left in
``container list --all --format json`` and ``remove`` deletes it.

What it can do, as data (see docs/apple-container.md): ``no-network`` is
``--network none``, which gives the VM no network interface (the CLI enforces
it from release 0.6; an older CLI refuses the flag, so such a start fails
instead of running with a network); ``allowlist`` runs the same way with the
trial's egress proxy reached over an exec stream; ``public`` is the default
vmnet network. Builds from the task's Dockerfile or a prebuilt image; cpus
and memory are the VM's. Kept sandboxes (``bench sandbox create``,
``--keep-sandbox``, ``attach``, ``release``): :mod:`.apple_container.kept`.
No snapshots, GPUs, compose services, host mounts (the model bridge's unix
socket cannot cross into the VM) or cached agent layers in this version.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from benchflow.errors import SandboxUnavailable

from . import cli as cli
from . import kept as kept
from .. import docker_engine as eng
from ..base import Backend, Capabilities, OwnedSandbox, SandboxSpec
from ..remote_common import carries, owned_row, wanted_labels

NAME = "apple-container"
PULL_TIMEOUT_SEC = 600
_image_status: dict[str, tuple[bool, str]] = {}


class AppleContainerBackend(Backend):
    """See the module docstring."""

    name = NAME
    no_cache_reason = ("keeps no cache BenchFlow lists in this version: its images are in the container CLI's "
                       "own store (container image list)")
    all_scope = "only the containers BenchFlow made (container list --all shows the others)"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(network_modes=frozenset({"no-network", "public", "allowlist"}), snapshots=False,
                            gpus=False, multi_service=False, build_from_dockerfile=True, resource_limits=True,
                            host_mounts=False, image_layers=False, keep=True, exec_writes_persist=True)

    def available(self) -> tuple[bool, str]:
        return cli.status()

    def create(self, spec: SandboxSpec):
        from .sandbox import AppleContainerSandbox

        labels = cli.owner_labels({eng.TASK: spec.name, **spec.labels}) | {eng.BACKEND: NAME}
        return AppleContainerSandbox(spec, capabilities=self.capabilities, labels=labels)

    def set_build_concurrency(self, n: int) -> None:
        """The limit :func:`.docker_build.build_slots` reads (a loop's build semaphore is made on its first build)."""
        from ..docker_build import set_build_concurrency

        set_build_concurrency(n)

    def image_status(self, ref: str, *, pull: bool = True) -> tuple[bool | None, str]:
        """In Apple container's images, or pulled now (asked once per process)."""
        known = _image_status.get(ref)
        if known is not None:
            return known
        try:
            if cli.run(["image", "inspect", ref]).returncode == 0:
                status = (True, "is in Apple container's images")
            elif not pull:
                return None, "is not in Apple container's images: a run pulls it, else builds environment/Dockerfile"
            else:
                done = cli.run(["image", "pull", "--progress", "none", ref], timeout=PULL_TIMEOUT_SEC)
                status = (True, "was pulled") if done.returncode == 0 else (
                    False, f"cannot be pulled ({cli.error_line(done)})")
        except SandboxUnavailable as exc:
            return False, f"cannot be looked up: {exc}"
        _image_status[ref] = status
        return status

    def host_resources(self) -> tuple[float | None, int | None]:
        """This Mac's CPUs and memory: the most one VM can be given."""
        return cli.host_resources()

    def exists(self, sandbox_id: str) -> bool:
        try:
            return bool(cli.snapshots([sandbox_id]))
        except SandboxUnavailable:
            return False

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        """Its containers in ``container list --all``; none where the CLI cannot run (not macOS)."""
        try:
            cli.executable()
        except SandboxUnavailable:
            return []
        wanted = wanted_labels(NAME, owner)
        marked = kept.marked()
        return [_row(item, marked) for item in cli.snapshots() if carries(cli.labels(item), wanted)]

    def remove(self, ids: list[str]) -> dict[str, str]:
        stayed: dict[str, str] = {}
        for sandbox_id in ids:
            try:
                done = cli.run(["delete", "--force", sandbox_id])
                if done.returncode != 0 and self.exists(sandbox_id):
                    stayed[sandbox_id] = cli.error_line(done)
                else:
                    kept.forget(sandbox_id)
            except SandboxUnavailable as exc:
                stayed[sandbox_id] = str(exc)
        return stayed

    async def create_kept(self, spec: SandboxSpec) -> dict[str, object]:
        return await kept.create_kept(self, spec)

    def attach(self, record: Mapping[str, object], command: list[str]) -> int:
        return kept.attach(record, command)

    def release(self, record: Mapping[str, object]) -> None:
        kept.release(self, record)


def _row(item: dict, marked: set[str]) -> OwnedSandbox:
    """Its row; kept when made kept (``bench sandbox create``) or marked kept here (``--keep-sandbox``)."""
    marks, sandbox_id = cli.labels(item), cli.container_id(item)
    created = eng.created_at(marks, cli.started(item)) or time.time()
    return owned_row(marks, alive=cli.owner_alive(marks), id=sandbox_id, name=sandbox_id, sandbox=NAME,
                     engine="apple container", state=cli.state(item), image=cli.image(item), created=created,
                     kept=marks.get(eng.KEPT) == "true" or sandbox_id in marked)


BACKEND = AppleContainerBackend()
