"""The simulated user of a task (``user:`` and ``## user-persona``, contracts §1.5).

After the agent's turn ends, the user reads the agent's last message and answers
as the persona; the answer is the agent's next prompt in the same ACP session
(``AgentContext.follow_up``). The conversation stops on the stop rule:
``satisfied-or-N-rounds`` (the user says it is satisfied, a line ``SATISFIED``,
or N answers were given), ``N-rounds`` or ``satisfied`` (at most
:data:`benchflow.tasks.user_plan.DEFAULT_ROUNDS`).

``model: scripted`` answers from ``user.script`` (a list of lines, one per round)
or, without one, from the private facts (one ``name: value`` per round), with no
model call. Any other model is called through the job's model gateway (metered
against the job's budget, every exchange written, redacted, to the trial's
``trajectory/user_llm_trajectory.jsonl``). Private facts go to the user model
only: they are never part of the agent's prompt, only of what the user chooses
to answer.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchflow.errors import AgentError, TaskError
from benchflow.tasks.user_plan import UserPlan, user_plan

SATISFIED = "SATISFIED"


def satisfied(text: str) -> bool:
    return any(line.strip().strip(".!").upper() == SATISFIED for line in text.splitlines())


def system_prompt(plan: UserPlan) -> str:
    facts = "\n".join(f"- {k}: {v}" for k, v in plan.private_facts.items())
    return ("You play the user of an AI agent that is working on a task for you. Stay in character and "
            "answer the agent's last message in a few sentences, as this user would.\n\n"
            f"Who you are:\n{plan.persona or '(no persona given)'}\n\n"
            + (f"Facts only you know (share them when the agent needs them):\n{facts}\n\n" if facts else "")
            + f"When the agent's work fully satisfies you, answer with a line {SATISFIED} and nothing else.")


class SimulatedUser:
    """One conversation's user: call it with the agent's last message for the next prompt (or None)."""

    def __init__(self, plan: UserPlan, *, record: Path, gateway: Any = None,
                 env: dict[str, str] | None = None, label: str = "user") -> None:
        self.plan = plan
        self.record = record
        self.gateway = gateway
        self.env = {**os.environ, **(env or {})}
        self.label = label
        self.rounds: list[dict[str, Any]] = []
        self.stopped_by: str | None = None
        self._transcript: list[str] = []

    async def __call__(self, agent_message: str) -> str | None:
        if len(self.rounds) >= self.plan.max_rounds:
            self.stopped_by = "rounds"
            return None
        self._transcript.append(f"Agent: {agent_message.strip() or '(no message)'}")
        usage: dict[str, Any] | None = None
        if self.plan.scripted:
            reply = self._scripted()
        else:
            reply, usage = await self._ask()
        if reply is None or (self.plan.until_satisfied and satisfied(reply)):
            self.stopped_by = "satisfied" if reply is not None else "script_ended"
            return None
        self._transcript.append(f"You: {reply}")
        self.rounds.append({"round": len(self.rounds) + 1, "agent_message": agent_message, "reply": reply,
                            **({"usage": usage} if usage else {})})
        return reply

    def _scripted(self) -> str | None:
        lines = self.plan.script or [f"{k}: {v}" for k, v in self.plan.private_facts.items()]
        n = len(self.rounds)
        return lines[n] if n < len(lines) else None

    async def _ask(self) -> tuple[str, dict[str, Any]]:
        from benchflow.errors import VerifierError
        from benchflow.gateway import Upstreams
        from benchflow.verify.judge_model import ask_judge

        found = Upstreams.from_env(self.env).for_model(self.plan.model)
        if found is None or not found[0].api_key:
            raise AgentError(f"the simulated user's model {self.plan.model!r} has no provider key on this machine; "
                             "set its key (e.g. OPENAI_API_KEY) or use user.model: scripted", category="api_error")
        prompt = ("The conversation so far:\n\n" + "\n\n".join(self._transcript)
                  + "\n\nWrite your next message to the agent.")
        try:
            reply = await ask_judge(self.plan.model, system_prompt(self.plan), prompt, env=self.env,
                                    record=self.record, gateway=self.gateway, label=self.label)
        except VerifierError as exc:
            cause = str(exc).removeprefix("verifier crashed: ").removeprefix("judge ")
            raise AgentError(f"the simulated user's model call failed: {cause}", category="api_error") from None
        return reply.text.strip(), reply.usage

    def summary(self) -> dict[str, Any]:
        """``simulated-user.json``: the rule, every round's reply (and the model's usage for it), why the
        conversation stopped."""
        return {"model": self.plan.model, "max_rounds": self.plan.max_rounds,
                "until_satisfied": self.plan.until_satisfied, "rounds": self.rounds,
                "stopped_by": self.stopped_by or ("rounds" if len(self.rounds) >= self.plan.max_rounds else None)}


async def converse(req: Any, sandbox: Any, paths: Any, prompts: list[str], sink: Any, state: Any,
                   timing: dict[str, float]) -> None:
    """The agent phase, with the task's simulated user answering after the prompts (when it has one):
    ``simulated-user.json`` and ``trajectory/user_llm_trajectory.jsonl`` land in ``paths``."""
    from benchflow.util import atomic

    from benchflow.jobs.phases import agent_phase

    try:
        plan = None if req.agent.is_control else user_plan(req.task)
    except TaskError as exc:
        state.error, state.error_category = str(exc), "other"
        return
    if plan is None:
        await agent_phase(req, sandbox, paths, prompts, sink, state, timing)
        return
    if req.spec.harness == "native":
        state.error, state.error_category = ("the task's simulated user needs an ACP agent (its answers are "
                                             "prompts in the same session); run with --harness acp"), "other"
        return
    user = SimulatedUser(plan, record=paths.trajectory_dir / "user_llm_trajectory.jsonl",
                         gateway=req.models.gateway if req.models is not None else None,
                         env=req.agent_env, label=f"user-{paths.name}")
    try:
        await agent_phase(req, sandbox, paths, prompts, sink, state, timing, follow_up=user)
    finally:
        atomic.write_json(paths.root / "simulated-user.json", user.summary())
