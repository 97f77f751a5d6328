"""The Codex Apps policy as a run feature (``jobs.extensions``), asked by every run: it acts only on
codex-acp trials (``disabled`` unless the run passes ``--codex-apps-policy inherit``), refuses a disabled
policy for a root agent up front, enforces it after the agent's install (:mod:`.policy`) and writes the
trial's ``codex_apps_policy.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchflow.jobs.layout import TrialPaths
    from benchflow.jobs.phases import TrialState
    from benchflow.jobs.plan import Plan
    from benchflow.jobs.spec import RunSpec
    from benchflow.jobs.trial_request import TrialRequest
    from benchflow.sandbox.base import Sandbox

CODEX = "codex-acp"
CONTROLS = {"oracle", "nop", "empty"}


def _is_codex(agent: str) -> bool:
    """Whether ``agent`` (a name, alias or agent file as given to ``-a``) is the codex-acp registry agent."""
    if agent in CONTROLS or agent.startswith("acp:"):
        return False
    if agent in (CODEX, "codex"):
        return True
    from benchflow.agents.registry import get_agent_config
    from benchflow.errors import BenchError

    try:
        return get_agent_config(agent).name == CODEX
    except BenchError:
        return False  # the run refuses an unknown agent on its own


def applied(spec: RunSpec) -> str:
    return spec.codex_apps_policy or "disabled"


class CodexAppsFeature:
    name = "codex-apps"

    def __init__(self) -> None:
        self._receipts: dict[str, dict[str, Any]] = {}

    def plan_refusals(self, plan: Plan) -> list[str]:
        spec = plan.spec
        if not _is_codex(spec.agent) or applied(spec) != "disabled" or spec.sandbox_user is not None:
            return []
        from .policy import OPT_OUT

        return [f"codex-acp as root: Codex account Apps are disabled in scored trials, and a root agent could "
                f"undo that; give --sandbox-user a user, or {OPT_OUT}"]

    def plan_warnings(self, plan: Plan) -> list[str]:
        spec = plan.spec
        if spec.codex_apps_policy is None or _is_codex(spec.agent):
            return []
        return [f"--codex-apps-policy {spec.codex_apps_policy}: only codex-acp has account Apps; "
                f"agent {spec.agent} runs as it would without it"]

    def comparable(self, spec: RunSpec, task: Any, agent_name: str) -> dict[str, Any]:
        return {"codex_apps_policy": applied(spec)} if agent_name == CODEX else {}

    def trial_record(self, req: TrialRequest) -> dict[str, Any]:
        return {"codex_apps_policy": applied(req.spec)} if req.agent.name == CODEX else {}

    async def before_agent(self, req: TrialRequest, sandbox: Sandbox, user: str | None) -> None:
        if req.agent.name != CODEX:
            return
        receipt: dict[str, Any] = {"requested": req.spec.codex_apps_policy or "automatic", "applied": applied(req.spec)}
        self._receipts[sandbox.sandbox_id] = receipt
        if receipt["applied"] == "inherit":
            receipt["mechanism"] = "inherited"
            return
        from .policy import enforce_disabled

        try:
            receipt.update(await enforce_disabled(sandbox, user, req.spec.harness))
        except Exception as exc:  # recorded in the receipt, then raised on: the agent does not start
            receipt.update(mechanism="managed_requirements", refused=str(exc))
            raise

    async def after_trial(self, req: TrialRequest, sandbox: Sandbox, paths: TrialPaths, state: TrialState) -> None:
        receipt = self._receipts.pop(sandbox.sandbox_id, None)
        if receipt is not None:
            from benchflow.util import atomic

            atomic.write_json(paths.codex_apps_policy, receipt)


CODEX_APPS = CodexAppsFeature()
