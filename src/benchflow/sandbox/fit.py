"""How a task's sandbox request is met on a backend: what it asked for, what it gets, and why.

Published tasks ask for things a given machine may not have: a prebuilt image that cannot be
pulled (offline, a private mirror, a deleted tag) while its Dockerfile ships beside it, or more
CPUs and memory than the host has. Harbor builds from the Dockerfile and clamps to the host; so do
we, but never silently: the plan's run card says what was adapted, ``--dry-run`` and
``bench tasks check --level runtime-capability`` show it per task, and every trial records it in
``config.json`` (``environment``).

The backend answers two questions (see :class:`benchflow.sandbox.Backend`):
``image_status(ref, pull=...)`` and ``host_resources()``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .base import SandboxSpec


@dataclass(frozen=True)
class Fit:
    """One task's sandbox request against one backend: asked vs granted."""

    image_source: str
    """``prebuilt`` (the pinned image is used as is), ``dockerfile`` (built from environment/),
    ``none`` (neither can be had: the plan refuses the task), or, in a dry run that pulls nothing,
    ``pull`` (a run pulls the pinned image, and builds environment/Dockerfile if that fails, when
    there is one)."""
    prebuilt: str | None
    """The task's pinned image (``sandbox.docker_image``), if any."""
    fallback_reason: str | None
    """Why a pinned image is not used (it cannot be had here); None when it is, or none is pinned."""
    cpus: tuple[float, float]
    memory_mb: tuple[int, int]
    network: tuple[str, str | None]
    """(asked, delivered): delivered is None when the backend refuses the mode."""
    refusal: str | None = None
    """Why the task cannot run on this backend whatever the image (e.g. its docker-compose.yaml asks
    for a host bind mount), in one line naming the file and key; None when nothing stands in the way."""
    compose_notes: tuple[str, ...] = ()
    """What of the task's docker-compose.yaml is left out here (a host-folder volume), one line each."""

    def apply(self, spec: SandboxSpec) -> SandboxSpec:
        """``spec`` as the backend will run it."""
        return replace(spec, image=self.prebuilt if self.image_source in ("prebuilt", "pull") else None,
                       cpus=self.cpus[1], memory_mb=self.memory_mb[1])

    @property
    def usable(self) -> bool:
        """False when neither the pinned image nor a Dockerfile can give the task its image, or
        :attr:`refusal` says why it cannot run here."""
        return self.image_source != "none" and self.refusal is None

    def notes(self) -> list[str]:
        """Run-card warnings: each adaptation, in one line."""
        out = []
        if self.fallback_reason and self.image_source == "dockerfile":
            out.append(f"prebuilt image {self.prebuilt} {self.fallback_reason}; building environment/Dockerfile")
        elif self.image_source == "pull":
            out.append(f"prebuilt image {self.prebuilt} {self.fallback_reason}")
        if self.cpus[1] < self.cpus[0]:
            out.append(f"sandbox.cpus {self.cpus[0]:g} clamped to the host's {self.cpus[1]:g}")
        if self.memory_mb[1] < self.memory_mb[0]:
            out.append(f"sandbox.memory_mb {self.memory_mb[0]} clamped to the host's {self.memory_mb[1]}")
        out.extend(f"environment/docker-compose: {note}" for note in self.compose_notes)
        return out

    def summary(self) -> str:
        """One line for the dry-run report: image, network, resources asked -> granted."""
        image = {"prebuilt": f"prebuilt {self.prebuilt}", "dockerfile": "build environment/Dockerfile",
                 "pull": f"pull {self.prebuilt}", "none": f"unavailable {self.prebuilt}"}[self.image_source]
        if self.image_source == "dockerfile" and self.prebuilt:
            image += f" (prebuilt {self.prebuilt} {self.fallback_reason})"
        network = self.network[0] if self.network[1] == self.network[0] else \
            f"{self.network[0]} -> {self.network[1] or 'refused'}"
        return (f"image: {image} | network: {network} | cpus: {self.cpus[0]:g} -> {self.cpus[1]:g} | "
                f"memory_mb: {self.memory_mb[0]} -> {self.memory_mb[1]}")

    def record(self) -> dict[str, Any]:
        """What ``config.json`` keeps under ``environment``."""
        image: dict[str, Any] = {"source": self.image_source, "prebuilt": self.prebuilt}
        if self.fallback_reason:
            image["fallback_reason"] = self.fallback_reason
        if self.prebuilt is None:
            image.pop("prebuilt")
        return {"image": image,
                "cpus": {"asked": self.cpus[0], "granted": self.cpus[1]},
                "memory_mb": {"asked": self.memory_mb[0], "granted": self.memory_mb[1]},
                "network": {"asked": self.network[0], "granted": self.network[1]}}


def fit(backend: Any, spec: SandboxSpec, *, pull: bool = True) -> Fit:
    """How ``backend`` meets ``spec``. ``pull=False`` (dry runs) only looks at what is already there.

    Never raises for an engine that does not answer: the run card reports that separately.
    """
    has_dockerfile = spec.environment_dir is not None and (spec.environment_dir / spec.dockerfile).is_file()
    source, reason = "dockerfile", None
    if spec.image:
        ok, why = backend.image_status(spec.image, pull=pull)
        if ok:
            source = "prebuilt"
        elif ok is None:  # not looked for: a dry run does not pull
            source, reason = "pull", why
        elif has_dockerfile:
            reason = why
        else:
            source, reason = "none", why
    refusal, adapted = None, ()
    if spec.compose_file is not None and backend.capabilities.multi_service:
        from benchflow.errors import TaskError

        from .compose_file import load

        try:
            adapted = tuple(load(spec.compose_file, spec.compose_variables).dropped)
        except TaskError as exc:
            refusal = str(exc)
    host_cpus, host_memory = backend.host_resources()
    cpus = spec.cpus if host_cpus is None else min(spec.cpus, float(host_cpus))
    memory = spec.memory_mb if host_memory is None else min(spec.memory_mb, int(host_memory))
    return Fit(image_source=source, prebuilt=spec.image, fallback_reason=reason,
               cpus=(float(spec.cpus), float(cpus)), memory_mb=(int(spec.memory_mb), int(memory)),
               network=(spec.network_mode, backend.capabilities.network_for(spec.network_mode)), refusal=refusal,
               compose_notes=adapted)


async def fitted(backend: Any, spec: SandboxSpec) -> SandboxSpec:
    """``spec`` as ``backend`` runs it, for callers outside a plan (regrade, check levels)."""
    import asyncio

    return (await asyncio.to_thread(fit, backend, spec)).apply(spec)
