"""Checkpoints and checkpoint retries as a run feature (``jobs.extensions``): ``--checkpoints`` parsed, the
settings (``spec.checkpoints``) checked together, refused on a sandbox that cannot keep a snapshot, and the
trial's agent phase run by :class:`~benchflow.branch.retry.RunCheckpoints`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchflow.jobs.layout import TrialPaths
    from benchflow.jobs.plan import Plan
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest

    from .retry import RunCheckpoints


class CheckpointsFeature:
    name = "checkpoints"

    def parse_field(self, name: str, value: Any) -> Any:
        """``--checkpoints every-prompt|prompt:N[,M]`` as the spec keeps it."""
        from benchflow.errors import UserError

        from .spec import parse_checkpoints

        if name != "checkpoints.after" or not isinstance(value, str):
            return value
        try:
            return parse_checkpoints(value)
        except UserError as exc:
            raise ValueError(str(exc)) from None

    def check_spec(self, spec: RunSpec) -> None:
        """A retry needs checkpoints to retry from, and the retry's options need a retry."""
        settings = spec.checkpoints
        if settings.retry is not None and not settings.after:
            raise ValueError(f"--retry-from-checkpoint {settings.retry} needs --checkpoints (every-prompt or "
                             "prompt:N) to take the snapshot it retries from")
        for flag, value in (("--retry-prompt", settings.retry_prompt),
                            ("--retry-resume-session", settings.retry_resume_session)):
            if value not in (None, False) and settings.retry is None:
                raise ValueError(f"{flag} applies to a checkpoint retry; add --retry-from-checkpoint "
                                 "on-failure|on-timeout|both or leave it out")

    def plan_refusals(self, plan: Plan) -> list[str]:
        if not plan.spec.checkpoints.after:
            return []
        out = [f"{planned.name}: --checkpoints: a multi-step task's steps are verified one by one, which "
               "checkpoints do not follow; leave --checkpoints out" for planned in plan.tasks
               if planned.task.config.steps]
        if not plan.backend.capabilities.retained_snapshots:
            out.insert(0, f"--checkpoints: sandbox {plan.sandbox} cannot keep a snapshot past its sandbox; use "
                          "one that can (bench doctor lists what each can do) or leave --checkpoints out")
        return out

    def trial_mode(self, req: TrialRequest, paths: TrialPaths, prompts: list[str]) -> RunCheckpoints | None:
        from .retry import RunCheckpoints  # None without --checkpoints

        return RunCheckpoints.for_trial(req, paths, prompts)


CHECKPOINTS = CheckpointsFeature()
