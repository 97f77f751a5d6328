"""The start-up stages of an agent, shared by ``bench doctor --agent-start`` and ``bench eval smoke``.

Four stages, always in this order, each reported on one line: ``install`` (the sandbox and the
agent's install recipe), ``launch`` (the agent process starts and stays up), ``handshake`` (it
answers ACP ``initialize``) and ``first model call``. A stage after a failure is ``skipped``.
Launch and handshake are one call into the agent runtime, so they share one time; an agent whose
process ends before answering (``pipe_closed``) failed to launch, any other error is a handshake
failure. Doctor stops at the handshake (the model call is ``not exercised``: no prompt, no spend);
smoke takes the model-call stage from its hello-world run.
"""

from __future__ import annotations

from dataclasses import dataclass

STAGES = ("install", "launch", "handshake", "first model call")


@dataclass
class Stage:
    name: str
    status: str
    """ok, FAIL, skipped or not exercised."""
    seconds: float | None = None
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "FAIL"

    def describe(self) -> str:
        """The line without its status word: ``1.2s (detail)``, the cause, or why it did not run."""
        if self.status == "ok":
            text = f"{self.seconds:.1f}s" + (f" ({self.detail})" if self.detail else "")
        elif self.status == "FAIL":
            text = self.detail
        else:
            text = f"({self.detail})" if self.detail else ""
        return " ".join(text.split())

    def line(self) -> str:
        """``ok 1.2s``, ``FAIL <cause>``, ``skipped`` or ``not exercised (<why>)``: never more than one line."""
        return f"{self.status} {self.describe()}".strip()


def finish(done: list[Stage], *, model_call: Stage | None = None) -> list[Stage]:
    """All four stages: ``done`` (in order), then ``model_call`` or ``skipped`` for the rest."""
    out = list(done)
    failed = any(stage.failed for stage in out)
    for name in STAGES[len(out):]:
        if name == "first model call" and model_call is not None and not failed:
            out.append(model_call)
        else:
            out.append(Stage(name, "skipped"))
    return out
