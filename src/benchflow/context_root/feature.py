"""``--context-root`` as a run feature (``jobs.extensions``): the root checked, the run refused where a
build would not see the staged context, each trial's sandbox built from the task's staged context
(:mod:`.stage`), and the root recorded in ``config.json``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchflow.errors import ConfigError

if TYPE_CHECKING:
    from benchflow.jobs.plan import Plan
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest

    from .stage import Staged


def _root(spec: RunSpec) -> Path:
    root = Path(str(spec.context_root)).expanduser()
    if not root.is_dir():
        raise ConfigError(f"--context-root {spec.context_root}: not a folder; give the repository root the "
                          "tasks' Dockerfiles copy from")
    return root.resolve()


class ContextRootFeature:
    name = "context-root"

    def __init__(self) -> None:
        self._staged: dict[tuple[Path, Path, Path], Staged] = {}

    def check_spec(self, spec: RunSpec) -> None:
        _root(spec)

    def plan_refusals(self, plan: Plan) -> list[str]:
        out = []
        for planned in plan.tasks:
            task = planned.task
            if task.config.verifier.sandbox_mode == "separate" or plan.spec.verifier.sandbox == "separate":
                out.append(f"{planned.name}: --context-root: a separate verifier sandbox is built from the task's "
                           "own environment/, without the staged sources; leave one of them out")
            elif task.config.sandbox.docker_image and task.paths.environment_dir is None:
                out.append(f"{planned.name}: --context-root: the task runs the prebuilt image "
                           f"{task.config.sandbox.docker_image} and builds nothing")
        return out

    def plan_warnings(self, plan: Plan) -> list[str]:
        from .stage import plan as staging_plan

        root, out = _root(plan.spec), []
        for planned in plan.tasks:
            env = planned.task.paths.environment_dir
            if env is None or not (env / planned.task.paths.dockerfile.name).is_file():
                continue
            if not staging_plan(env, planned.task.paths.dockerfile.name, root)[1]:
                out.append(f"{planned.name}: --context-root {root}: no COPY source of its Dockerfile is under it; "
                           "built from environment/ as it is")
        return out

    def trial_record(self, req: TrialRequest) -> dict[str, Any]:
        return {"context_root": str(_root(req.spec))}

    def sandbox_options(self, req: TrialRequest) -> dict[str, Any]:
        """The staged context in place of ``environment/``, its content in the image's cache key."""
        from .stage import stage

        env = req.task.paths.environment_dir
        if env is None:
            return {}
        root = _root(req.spec)
        key = (req.job.root, env, root)
        if key not in self._staged:  # once per task and job in this process; the folder is content-addressed
            self._staged[key] = stage(env, req.task.paths.dockerfile.name, root, req.job.build_contexts,
                                      req.task.name)
        staged = self._staged[key]
        return {"environment_dir": staged.folder, "digest": f"{req.digest}+context:{staged.digest}"}


CONTEXT_ROOT = ContextRootFeature()
