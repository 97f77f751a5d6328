"""A ``--loop-strategy`` trial's agent phase: rounds of a fresh agent session, each soft-verified.

Round 0 sends the trial's prompts as the plain mode does. After each round the task's verifier runs in
the trial's sandbox (the same fence and verifier as the final one) into ``loop/<NN>/verifier/``; its files
are removed from the sandbox again at once, so the next round's agent never reads the tests. A round at
or above the bar (reward 1) stops the loop, and so do an agent that failed or ran out of its time (each
round has the task's agent timeout), a spent model budget (``--token-budget`` / ``--turn-budget`` count
per round), and the ``k`` retries being used up. The agent is installed once; each round is a new session
(it sees its previous work in the workspace, not its conversation). The runner's verifier then scores the
trial.

Each round is one line of ``loop/iterations.jsonl``; ``result.json`` gets the ``loop`` block
(``iterations_run``, ``stop_reason``: passed_bar | max_iterations | error | budget, the soft
``reward_trajectory``, ``first_pass_iteration``, cumulative ``tokens_trajectory``, ``tokens_to_pass``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchflow.errors import BenchError
from benchflow.jobs.modes import PlainMode
from benchflow.util import atomic

from .strategy import PASS_THRESHOLD, LoopStrategy

if TYPE_CHECKING:
    from benchflow.agents.base import AgentOutcome
    from benchflow.agents.trajectory import AcpTrajectoryFile
    from benchflow.jobs.phases import TrialState
    from benchflow.sandbox.base import Sandbox

_CLEAR = ("rm -rf /verifier /logs/verifier/* /logs/verifier/.[!.]* 2>/dev/null; "
          "[ -L /tests ] && rm -f /tests; exit 0")
_CLEAR_LEGACY = "rm -rf /tests /logs/verifier/* /logs/verifier/.[!.]* 2>/dev/null; exit 0"
_SUMMED = ("n_input_tokens", "n_output_tokens", "n_cache_read_tokens", "n_cache_creation_tokens", "cost_usd")
_TIMED = ("agent_setup", "agent_execution")


@dataclass
class LoopMode(PlainMode):
    strategy: LoopStrategy = field(default_factory=LoopStrategy)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None

    async def agent_phase(self, sandbox: Sandbox, sink: AcpTrajectoryFile, state: TrialState,
                          timing: dict[str, float]) -> None:
        from benchflow.jobs.phases import agent_phase

        prompts, feedback, total = self.prompts, None, None
        for index in range(self.strategy.max_rounds):
            started, round_timing = time.monotonic(), {}
            await agent_phase(self.req, sandbox, self.paths, prompts, sink, state, round_timing)
            state.installed_by_layer = True  # installed in this sandbox now: later rounds only run it
            for key in _TIMED:
                if key in round_timing:
                    timing[key] = timing.get(key, 0.0) + round_timing[key]
            total = _add(total, state.outcome)
            row: dict[str, Any] = {"round": index, "prompt": prompts[-1] if index else None,
                                   "feedback_level": self.strategy.feedback, "feedback": feedback,
                                   "n_tool_calls": state.outcome.n_tool_calls if state.outcome else 0,
                                   "tokens": _tokens(total)}
            if state.error is not None or state.outcome is None:
                self._log(row | {"rewards": None, "verifier_error": None, "wall_sec": _since(started)})
                self.stop_reason = "error"
                break
            rewards, output, error = await self._soft_verify(sandbox, state, index)
            self._log(row | {"rewards": rewards, "verifier_error": error, "wall_sec": _since(started)})
            reward = (rewards or {}).get("reward")
            if isinstance(reward, (int, float)) and reward >= PASS_THRESHOLD:
                self.stop_reason = "passed_bar"
                break
            if state.budget_stop:
                self.stop_reason = "budget"
                break
            if index + 1 == self.strategy.max_rounds:
                self.stop_reason = "max_iterations"
                break
            prompt, feedback = self.strategy.retry_prompt(output)
            prompts = [prompt]
        if total is not None:
            state.outcome = total

    async def _soft_verify(self, sandbox: Sandbox, state: TrialState,
                           index: int) -> tuple[dict[str, Any] | None, str, str | None]:
        """The task's verifier on the workspace as it is now: (rewards, its output, its error)."""
        from benchflow.jobs.trial_request import seed_env
        from benchflow.verify import run_verifier

        req, folder = self.req, self.paths.loop_verifier_dir(index)
        folder.mkdir(parents=True, exist_ok=True)
        outcome = await run_verifier(sandbox, req.task, folder, workdir=sandbox.workdir, agent_user=req.agent_user,
                                     task_name=req.task.name, extra_env={**state.verifier_env, **seed_env(req.seed)},
                                     trial_dir=self.paths.root,
                                     gateway=req.models.gateway if req.models is not None else None)
        try:  # the next round's agent must not find the tests or their output
            await sandbox.exec(["sh", "-c", _CLEAR_LEGACY if req.task.paths.is_legacy else _CLEAR], timeout=60)
        except BenchError:
            pass  # a sandbox that cannot run this cannot run the next round either: that round fails
        stdout = folder / "test-stdout.txt"
        output = stdout.read_text(encoding="utf-8", errors="replace") if stdout.is_file() else ""
        return outcome.rewards, output, outcome.error

    def _log(self, row: dict[str, Any]) -> None:
        self.rounds.append(row)
        atomic.write_jsonl(self.paths.loop_iterations, self.rounds)

    def annotate(self, result: dict[str, Any]) -> None:
        result["loop"] = {**self.strategy.record(), **summary(self.rounds, self.stop_reason)}


def summary(rounds: list[dict[str, Any]], stop_reason: str | None) -> dict[str, Any]:
    """The ``loop`` block's figures from the rounds that ran."""
    trajectory = [(r.get("rewards") or {}).get("reward") for r in rounds]
    first = next((r["round"] for r, reward in zip(rounds, trajectory)
                  if isinstance(reward, (int, float)) and reward >= PASS_THRESHOLD), None)
    return {"iterations_run": len(rounds), "stop_reason": stop_reason or ("error" if not rounds else None),
            "reward_trajectory": trajectory, "first_pass_iteration": first,
            "tokens_trajectory": [r.get("tokens") for r in rounds],
            "tokens_to_pass": next((r.get("tokens") for r in rounds if r["round"] == first), None)}


def _add(total: AgentOutcome | None, current: AgentOutcome | None) -> AgentOutcome | None:
    """The trial's outcome so far: the latest round's, its counts and usage summed over the rounds."""
    if total is None or current is None or current is total:
        return current or total
    current.n_tool_calls += total.n_tool_calls
    current.n_prompts += total.n_prompts
    usage = dict(current.usage or {})
    for key, value in (total.usage or {}).items():
        if key in _SUMMED and isinstance(value, (int, float)):
            usage[key] = (usage.get(key) or 0) + value
    current.usage = usage
    return current


def _tokens(outcome: AgentOutcome | None) -> int | None:
    usage = (outcome.usage or {}) if outcome is not None else {}
    counts = [usage.get(k) for k in _SUMMED[:4]]
    return int(sum(c for c in counts if isinstance(c, (int, float)))) if any(
        isinstance(c, (int, float)) for c in counts) else None


def _since(started: float) -> float:
    return round(time.monotonic() - started, 1)
