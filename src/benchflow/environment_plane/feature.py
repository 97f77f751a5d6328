"""The stateful environment as a run feature (``jobs.extensions``): the binding checked up front, refused where
it cannot run, recorded in ``config.json``, provisioned before each trial's agent and torn down after its
verifier (:mod:`.services`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .binding import Binding, bind
from .registry import REGISTRY_VAR

if TYPE_CHECKING:
    from benchflow.jobs.layout import TrialPaths
    from benchflow.jobs.phases import TrialState
    from benchflow.jobs.plan import Plan
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Sandbox

    from .services import Provisioned

_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE | re.MULTILINE)


class EnvironmentPlaneFeature:
    name = "environment-plane"

    def __init__(self) -> None:
        self._bound: dict[tuple[Any, ...], Binding] = {}
        self._live: dict[Path, Provisioned] = {}

    def _binding(self, spec: RunSpec) -> Binding:
        """The run's binding, resolved once per setting (and registry)."""
        key = (spec.state, spec.environment_manifest, os.environ.get(REGISTRY_VAR))
        if key not in self._bound:
            found = bind(spec)
            assert found is not None  # the row is switched on by one of the two settings
            self._bound[key] = found
        return self._bound[key]

    def check_spec(self, spec: RunSpec) -> None:
        self._binding(spec)  # a value that names no manifest, or one that does not load, is refused up front

    def plan_refusals(self, plan: Plan) -> list[str]:
        binding = self._binding(plan.spec)
        manifest, what = binding.manifest, f"{binding.flag} {manifest_name(binding)}"
        out = []
        if manifest.owns_lifecycle:
            out.append(f"{what}: owns_lifecycle = true (the image's entrypoint starts the services) cannot run "
                       "here: a sandbox runs a main process of its own, never the image's entrypoint; declare "
                       "[[environment.services]] with owns_lifecycle = false")
        if manifest.isolation == "persistent":
            out.append(f"{what}: isolation = persistent keeps state across trials, and every trial gets a fresh "
                       "sandbox; use isolation = per_task")
        return out

    def plan_warnings(self, plan: Plan) -> list[str]:
        spec, out = plan.spec, []
        if spec.checkpoints.retry:
            out.append("--retry-from-checkpoint: a retry restores the sandbox from a snapshot, and the "
                       "environment's services are processes, not files: they do not run in the retry")
        for planned in plan.tasks:
            if spec.verifier.sandbox == "separate" or planned.task.config.verifier.sandbox_mode == "separate":
                out.append(f"{planned.name}: its verifier runs in a sandbox of its own, where the environment's "
                           "services do not run")
        base = self._binding(spec).manifest.base_image
        if not base or spec.base_image_override:
            return out
        for planned in plan.tasks:
            dockerfile = planned.task.paths.environment_dir / "Dockerfile" \
                if planned.task.paths.environment_dir is not None else None
            found = _FROM.search(dockerfile.read_text(encoding="utf-8", errors="replace")) \
                if dockerfile is not None and dockerfile.is_file() else None
            if found is not None and found.group(1) != base:
                out.append(f"{planned.name}: builds FROM {found.group(1)}, not the environment's base image "
                           f"{base}: only the services whose programs its image has are started")
        return out

    def comparable(self, spec: RunSpec, task: Any, agent_name: str) -> dict[str, Any]:
        return {"environment_manifest": self._binding(spec).record()}

    def trial_record(self, req: TrialRequest) -> dict[str, Any]:
        return {"environment_manifest": self._binding(req.spec).record()}

    async def before_trial(self, req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: TrialState) -> None:
        from benchflow.errors import SandboxError

        from .services import Provisioned, provision

        self._live[paths.root] = done = Provisioned(self._binding(req.spec))
        try:
            await provision(done, sandbox, req.task.name, paths.environment_plane)
        except SandboxError as exc:
            state.error, state.error_category = str(exc), exc.category
            state.sandbox_startup_info = {"reason": "refused" if exc.deterministic else "environment_not_ready",
                                          "sandbox_id": state.sandbox_id, "attempts": req.attempt,
                                          "raw_message": str(exc)[:500]}

    async def after_trial(self, req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: TrialState) -> None:
        from .services import teardown

        provisioned = self._live.pop(paths.root, None)
        if provisioned is not None:
            await teardown(provisioned, sandbox, paths.environment_plane)


def manifest_name(binding: Binding) -> str:
    return binding.spec or str(binding.path)


ENVIRONMENT_PLANE = EnvironmentPlaneFeature()
