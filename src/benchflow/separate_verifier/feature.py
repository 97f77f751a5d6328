"""The separate verifier as a run feature (``jobs.extensions``): ``--separate-verifier-include`` checked
(``spec.verifier``), the
run card's refusals of ``--verifier-sandbox separate``, and the verifier phase of a trial whose run or task
asks for a sandbox of its own (:func:`.phase.separate_verifier_phase`).

Every run asks it (a task may ask for it), so this module is small; the phase is imported in a started
sandbox."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchflow.jobs.plan import Plan
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest


def wants_separate(req: TrialRequest) -> bool:
    return req.spec.verifier.sandbox == "separate" or req.task.config.verifier.sandbox_mode == "separate" \
        or req.task.config.verifier.sandbox is not None


class SeparateVerifierFeature:
    name = "separate-verifier"

    def check_spec(self, spec: RunSpec) -> None:
        for path in spec.verifier.include:
            if not path.startswith("/") or path.rstrip("/") == "":
                raise ValueError(f"--separate-verifier-include {path!r}: give an absolute path such as /root")

    def plan_refusals(self, plan: Plan) -> list[str]:
        """``--verifier-sandbox separate``: each task it cannot verify apart (a task's own choice of a separate
        sandbox is judged with the rest of its runtime issues)."""
        if plan.spec.verifier.sandbox != "separate":
            return []
        from benchflow.tasks.capability import separate_verifier_issues

        out: list[str] = []
        for planned in plan.tasks:
            own = set(separate_verifier_issues(planned.task))
            out += [f"{planned.name}: {issue}" for issue in
                    dict.fromkeys(separate_verifier_issues(planned.task, forced=True)) if issue not in own]
        return out

    def verifier(self, req: TrialRequest) -> Any:
        if not wants_separate(req):
            return None
        from .phase import separate_verifier_phase

        return separate_verifier_phase


SEPARATE_VERIFIER = SeparateVerifierFeature()
