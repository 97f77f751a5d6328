"""Monitor semantics: one judge model call scores a rollout's trajectory against a rubric.

In production there is no sandbox to look into and no hidden test to run: the judge reads only the
record of what the agent was asked, said and did (its turns, :mod:`.render`), and scores each rubric
criterion from 0 to 1 in the answer shape verify's ``llm-judge`` asks for, read by the same code
(:func:`benchflow.verify.strategies.judges.criteria_scores`). The reward is the weighted mean.

An **alert** (page a human) is kept apart from the reward: it is raised when the reward, or any one
criterion's score, is below ``alert_below``. A judge that cannot score (no answer, a reply that does
not fit the rubric) is the monitor's failure, never a low score and never an alert.

The call goes through a BenchFlow model gateway (:func:`benchflow.verify.judge_model.ask_judge`), so it
is recorded, redacted, in ``judge_llm_trajectory.jsonl``; the provider key comes from this process's
environment (the standard variables, e.g. ``ANTHROPIC_API_KEY``) and is never written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError, VerifierError

from .render import render
from .rubric import Scoring
from .transcript import Transcript

JUDGE_RECORD = "judge_llm_trajectory.jsonl"


@dataclass
class Judged:
    """The judge's part of a verdict."""

    reward: float | None = None
    criteria: list[dict[str, Any]] = field(default_factory=list)
    alert_reasons: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    provider: str | None = None
    error: str | None = None
    error_category: str | None = None
    """``verifier_failure``: the judge's answer did not fit (status ``verifier_error``); anything else
    (``verifier_infra``: the call got no answer; ``unreadable_trajectory``) is status ``error``."""
    cut_turns: int = 0

    @property
    def status(self) -> str:
        if self.error is None:
            return "scored"
        return "verifier_error" if self.error_category == "verifier_failure" else "error"


def check_key(model: str, env: Mapping[str, str]) -> None:
    """Refuse before any work when no provider configured in ``env`` serves ``model`` with a key.

    Raises:
        ConfigError: no such provider, or a provider variable that is wrong.
    """
    from benchflow.gateway import Upstreams

    found = Upstreams.from_env(env).for_model(model)
    if found is None or not found[0].api_key:
        raise ConfigError(f"--model {model}: no provider key for it in the environment; set the provider's key "
                          "(e.g. ANTHROPIC_API_KEY for claude-*, OPENAI_API_KEY for gpt-*) or pick another --model")


def prompt(transcript: Transcript, scoring: Scoring) -> tuple[str, int]:
    """(the judge's prompt, turns left out of it to fit)."""
    text, cut = render(transcript.turns)
    names = ", ".join(c["name"] for c in scoring.criteria)
    parts = [f"# Task given to the agent\n\n{scoring.instruction}\n\n" if scoring.instruction else "",
             f"# Context\n\n{scoring.context}\n\n" if scoring.context else "",
             f"# Rubric\n\n{scoring.text.strip()}\n\n",
             f"# Trajectory (what the agent was asked, said and did, as recorded: {transcript.kind})\n\n{text}\n\n",
             "# Your answer\n\nThis rollout ran in production: there is no workspace to inspect and no test result. "
             "Judge only what the trajectory shows. Score every criterion from 0 (not met) to 1 (fully met). "
             'Reply with exactly {"criteria": [{"name": "<criterion>", "score": <0..1>, "reasoning": "<why>"}]} '
             f"with one entry for each of these criteria: {names}."]
    return "".join(parts), cut


def alerts(reward: float, criteria: list[dict[str, Any]], alert_below: float) -> list[str]:
    reasons = [f"reward {reward:.2f} < {alert_below:g}"] if reward < alert_below else []
    return reasons + [f"{c['name']} {c['score']:.2f} < {alert_below:g}" for c in criteria if c["score"] < alert_below]


async def judge(transcript: Transcript, scoring: Scoring, *, env: Mapping[str, str], folder: Path,
                alert_below: float, gateway: Any = None, label: str = "monitor") -> Judged:
    """Score one rollout; a judge that fails is recorded on the result, never raised."""
    from benchflow.verify.judge_model import ask_judge
    from benchflow.verify.strategies.context import reply_json
    from benchflow.verify.strategies.judges import JUDGE_SYSTEM, criteria_scores

    text, cut = prompt(transcript, scoring)
    try:
        reply = await ask_judge(scoring.model, JUDGE_SYSTEM, text, env=env, record=folder / JUDGE_RECORD,
                                gateway=gateway, label=label)
        scored = criteria_scores(reply_json(reply.text), scoring.criteria)
    except VerifierError as exc:
        message = str(exc).removeprefix("verifier crashed: ")
        return Judged(error=message, error_category=exc.category, cut_turns=cut)
    weights = [c["weight"] for c in scored]
    reward = sum(c["weight"] * c["score"] for c in scored) / sum(weights)
    return Judged(reward=reward, criteria=scored, alert_reasons=alerts(reward, scored, alert_below),
                  usage=reply.usage, provider=reply.provider, cut_turns=cut)
