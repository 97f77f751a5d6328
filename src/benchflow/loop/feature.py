"""The loop strategy as a run feature (``jobs.extensions``): ``--loop-strategy`` parsed, refused where a task
has turns of its own, recorded in ``config.json``, and a trial's agent phase run as :class:`.mode.LoopMode`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .strategy import SINGLE_SHOT, parse

if TYPE_CHECKING:
    from benchflow.jobs.layout import TrialPaths
    from benchflow.jobs.plan import Plan
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest

    from .mode import LoopMode


class LoopFeature:
    name = "loop"

    def parse_field(self, name: str, value: Any) -> Any:
        """``--loop-strategy`` (or a run config's mapping) in its canonical spelling."""
        return parse(value).text if name == "loop_strategy" and value is not None else value

    def check_spec(self, spec: RunSpec) -> None:
        if spec.checkpoints.after and parse(spec.loop_strategy).name != SINGLE_SHOT:
            raise ValueError("--loop-strategy and --checkpoints both decide how a trial's agent phase runs; "
                             "give one of them")

    def plan_refusals(self, plan: Plan) -> list[str]:
        strategy = parse(plan.spec.loop_strategy)
        if strategy.name == SINGLE_SHOT:
            return []
        out = []
        if plan.spec.verifier.sandbox == "separate":
            out.append(f"--loop-strategy {strategy.text}: each round's soft verification runs in the trial's "
                       "sandbox, not a separate verifier sandbox; drop --verifier-sandbox separate")
        for planned in plan.tasks:
            task = planned.task
            turns = ("a multi-step task's steps" if task.config.steps else "a scene task's turns" if task.scenes
                     else "a simulated user's rounds" if task.has_user else None)
            if turns:
                out.append(f"{planned.name}: --loop-strategy re-prompts the agent, and {turns} already do; "
                           "leave --loop-strategy out for this task")
            elif task.config.verifier.sandbox_mode == "separate":
                out.append(f"{planned.name}: its verifier runs in a sandbox of its own, and --loop-strategy's "
                           "soft verification runs in the trial's; leave --loop-strategy out for this task")
        return out

    def comparable(self, spec: RunSpec, task: Any, agent_name: str) -> dict[str, Any]:
        return {"loop": parse(spec.loop_strategy).record()}

    def trial_record(self, req: TrialRequest) -> dict[str, Any]:
        return {"loop": parse(req.spec.loop_strategy).record()}

    def trial_mode(self, req: TrialRequest, paths: TrialPaths, prompts: list[str]) -> LoopMode | None:
        strategy = parse(req.spec.loop_strategy)
        if strategy.name == SINGLE_SHOT:
            return None
        from .mode import LoopMode

        return LoopMode(req, paths, prompts, strategy=strategy)


LOOP = LoopFeature()
