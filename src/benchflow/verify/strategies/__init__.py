"""Which verifier strategy a task uses, and the strategies themselves (contracts §1.11, §2.5).

``verifier/verifier.md`` with a strategy wins (its ``default_strategy``, else
the first declared); else a task-level ``verifier.type = "llm-judge"``; else
``test.sh``. ``script`` and ``reward-kit`` run inside the sandbox
(:mod:`.commands`); ``llm-judge``, ``agent-judge`` (:mod:`.judges`) and
``ors-episode`` (:mod:`.ors`) run on the host after the agent is fenced off.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from benchflow.errors import TaskError, VerifierError

from .context import StrategyContext

IN_SANDBOX = frozenset({"test-script", "script", "reward-kit"})


@dataclass(frozen=True)
class Selected:
    """The strategy a verification runs."""

    kind: str
    """``test-script`` (test.sh), ``script``, ``reward-kit``, ``llm-judge``, ``agent-judge``, ``ors-episode``."""
    name: str | None = None
    strategy: Any = None
    document: Any = None
    """The parsed verifier.md (``VerifierDocument``), when the task has one."""
    roles: dict[str, str] = field(default_factory=dict)

    @property
    def in_sandbox(self) -> bool:
        return self.kind in IN_SANDBOX


def select(task: Any) -> Selected:
    """The strategy ``task`` is verified with.

    Raises:
        VerifierError: verifier.md does not parse.
    """
    from benchflow.tasks.verifier_doc import load_verifier_md

    md = task.paths.verifier_md
    if md.is_file():
        try:
            document, _raw, roles = load_verifier_md(md)
        except TaskError as exc:
            raise VerifierError(f"verifier crashed: {exc}", category="verifier_failure") from None
        chosen = document.verifier.selected
        if chosen is not None:
            return Selected(chosen[1].type, chosen[0], chosen[1], document, roles)
        return Selected("test-script", document=document, roles=roles)
    if task.config.verifier.type == "llm-judge":
        return Selected("llm-judge")
    return Selected("test-script")


def host_runner(kind: str) -> Callable[[StrategyContext], Awaitable[None]]:
    from .judges import agent_judge, llm_judge
    from .ors import ors_episode

    return {"llm-judge": llm_judge, "agent-judge": agent_judge, "ors-episode": ors_episode}[kind]


__all__ = ["IN_SANDBOX", "Selected", "StrategyContext", "host_runner", "select"]
