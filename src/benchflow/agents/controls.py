"""The two control agents: ``oracle`` (the task's reference solution) and ``nop`` (does nothing).

Neither uses a model. The oracle runs the task's ``solve.sh`` as root in the
workspace with the task's ``oracle.env`` and its last prompt in ``BENCHFLOW_PROMPT``; a non-zero exit is only recorded,
the verifier decides. A correct task scores 1.0 under the oracle and 0 under nop.
"""

from __future__ import annotations

from benchflow.sandbox.base import Sandbox

from .base import AgentContext, AgentOutcome

# Runs solve.sh (bash when the image has it), logs to oracle.txt, and prints the log's tail for the
# trajectory event in the same round trip.
_SOLVE = ('s="$0"; if command -v bash >/dev/null 2>&1; then bash "$s"; else sh "$s"; fi '
          '> /logs/agent/oracle.txt 2>&1; rc=$?; tail -c 2000 /logs/agent/oracle.txt; exit $rc')


class ControlAgent:
    """What the control agents share: no model, no version, nothing to install."""

    is_control = True
    version = None

    async def install(self, sandbox: Sandbox, ctx: AgentContext) -> None:
        return None


class OracleAgent(ControlAgent):
    name = "oracle"
    needs_oracle = True
    runs_as_root = True

    async def run(self, sandbox: Sandbox, ctx: AgentContext) -> AgentOutcome:
        script = f"{ctx.oracle_dir}/solve.sh"
        env = {"DEBIAN_FRONTEND": "noninteractive", **dict(ctx.oracle_env)}
        if ctx.prompts:  # what it was asked (a branch child's own prompt): a solve.sh may act on it
            env["BENCHFLOW_PROMPT"] = ctx.prompts[-1]
        result = await sandbox.exec(["sh", "-c", _SOLVE, script], user=None, env=env, cwd=ctx.workdir,
                                    timeout=ctx.timeout_sec)
        ctx.trajectory.emit({"type": "oracle", "command": f"{ctx.oracle_dir.lstrip('/')}/solve.sh",
                             "return_code": result.return_code, "stdout": result.stdout[-2000:]})
        outcome = AgentOutcome(n_prompts=len(ctx.prompts), return_code=result.return_code,
                               trajectory_source="oracle")
        if result.timed_out:
            outcome.timed_out = True
        elif result.return_code != 0:
            ctx.log(f"oracle solve.sh exited with {result.return_code}; the verifier decides")
        return outcome


class NopAgent(ControlAgent):
    name = "nop"
    needs_oracle = False
    runs_as_root = False

    async def run(self, sandbox: Sandbox, ctx: AgentContext) -> AgentOutcome:
        return AgentOutcome(n_prompts=0, trajectory_source="nop")


CONTROLS = {"oracle": OracleAgent, "nop": NopAgent, "empty": NopAgent}
