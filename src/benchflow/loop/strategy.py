"""``--loop-strategy``: how the harness re-prompts the agent, parsed once and recorded with every trial.

Three strategies (the reference's spellings, a run config may give the same text or a mapping
``{strategy: verify-retry, params: {k: 3, feedback: names}}``):

- ``single-shot`` (the default): the task's prompts, once.
- ``verify-retry[:k=3,feedback=names]``: after each round the task's verifier runs as a *soft* check; below
  a reward of 1 the agent gets a fresh session with a retry prompt that carries the soft verifier's output
  filtered to ``feedback`` (``none``; ``counts``: pytest's summary line; ``names``: the failing tests' node
  ids, parametrize ids cut, as assertion text can show expected values; ``raw``: the output, cut to 4000
  characters), at most ``k`` times.
- ``self-review[:k=3]``: the same loop, but the retry prompt asks the agent to review its own work and
  carries nothing of the verifier's (it still decides when to stop).

Soft rewards are advisory: the trial is scored by the verifier that runs after the last round, as any
trial's is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SINGLE_SHOT = "single-shot"
VERIFY_RETRY = "verify-retry"
SELF_REVIEW = "self-review"
NAMES = (SINGLE_SHOT, VERIFY_RETRY, SELF_REVIEW)
FEEDBACK_LEVELS = ("none", "counts", "names", "raw")
DEFAULT_K = 3
PASS_THRESHOLD = 1.0
MAX_FEEDBACK_CHARS = 4000

RETRY_PROMPT = ("Your previous attempt did not pass verification.{feedback}\n\n"
                "Review your work in the workspace, fix the remaining issues, and try again.")
SELF_REVIEW_PROMPT = ("Critically review your previous solution in the workspace as if reviewing an unfamiliar "
                      "engineer's code: check correctness, edge cases, and whether it fully satisfies the task. "
                      "Identify any bugs or missed requirements, then fix them.")

_FAILED = re.compile(r"^(?:FAILED|ERROR)\s+(\S+)", re.MULTILINE)
_PARAM_ID = re.compile(r"\[.*\]$")
_SUMMARY = re.compile(r"^=+\s+(.+?(?:passed|failed|error|errors|skipped|xfailed|xpassed)[^=]*?)\s+=+\s*$",
                      re.MULTILINE)


@dataclass(frozen=True)
class LoopStrategy:
    name: str = SINGLE_SHOT
    k: int = 0
    """Retries after the first round (``verify-retry`` / ``self-review``); 0 for ``single-shot``."""
    feedback: str = "none"
    """How much of the soft verifier's output a retry prompt carries (``verify-retry`` only)."""

    @property
    def text(self) -> str:
        """The canonical spelling, as the run spec keeps it."""
        if self.name == VERIFY_RETRY:
            return f"{self.name}:k={self.k},feedback={self.feedback}"
        if self.name == SELF_REVIEW:
            return f"{self.name}:k={self.k}"
        return self.name

    @property
    def max_rounds(self) -> int:
        return self.k + 1

    def record(self) -> dict[str, Any]:
        """The ``loop`` block of ``config.json``: ``{strategy, params}``."""
        if self.name == SINGLE_SHOT:
            return {"strategy": SINGLE_SHOT}
        params: dict[str, Any] = {"k": self.k}
        if self.name == VERIFY_RETRY:
            params["feedback"] = self.feedback
        return {"strategy": self.name, "params": params}

    def retry_prompt(self, verifier_output: str) -> tuple[str, str]:
        """(the next round's prompt, the feedback it carries) after a round below the bar."""
        if self.name == SELF_REVIEW:
            return SELF_REVIEW_PROMPT, ""
        feedback = filter_feedback(verifier_output, self.feedback)
        return RETRY_PROMPT.format(feedback=f"\n\nVerifier feedback:\n{feedback}" if feedback else ""), feedback


def parse(value: Any) -> LoopStrategy:
    """``verify-retry:k=3,feedback=names`` (or a run config's ``{strategy, params}``) as a strategy.

    Raises:
        ValueError: one line naming what is wrong and the accepted spellings.
    """
    if isinstance(value, LoopStrategy):
        return value
    if isinstance(value, dict):
        name, params = value.get("strategy"), value.get("params") or {}
        if not isinstance(name, str) or not isinstance(params, dict):
            raise ValueError(f"--loop-strategy {value!r}: a mapping needs strategy: <name> and params: {{k: v}}")
        return _build(name.strip(), {str(k): str(v) for k, v in params.items()}, str(value))
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"--loop-strategy {value!r}: give single-shot, verify-retry[:k=N,feedback=LEVEL] or "
                         "self-review[:k=N]")
    name, sep, rest = value.strip().partition(":")
    params: dict[str, str] = {}
    for item in rest.split(",") if sep else []:
        key, eq, raw = (part.strip() for part in item.partition("="))
        if not key or not eq or not raw:
            raise ValueError(f"--loop-strategy {value!r}: {item.strip()!r} is not key=value")
        if key in params:
            raise ValueError(f"--loop-strategy {value!r}: {key} is given twice")
        params[key] = raw
    return _build(name.strip(), params, value)


def _build(name: str, params: dict[str, str], given: str) -> LoopStrategy:
    if name not in NAMES:
        raise ValueError(f"--loop-strategy {given!r}: unknown strategy {name!r}; give one of {', '.join(NAMES)}")
    allowed = {SINGLE_SHOT: set(), VERIFY_RETRY: {"k", "feedback"}, SELF_REVIEW: {"k"}}[name]
    unknown = sorted(set(params) - allowed)
    if unknown:
        takes = f"takes {', '.join(sorted(allowed))}" if allowed else "takes no parameters"
        raise ValueError(f"--loop-strategy {given!r}: {name} {takes}, not {', '.join(unknown)}")
    if name == SINGLE_SHOT:
        return LoopStrategy()
    raw_k = params.get("k", str(DEFAULT_K))
    if not raw_k.isdigit() or int(raw_k) < 1:
        raise ValueError(f"--loop-strategy {given!r}: k must be a whole number of retries, 1 or more")
    feedback = params.get("feedback", "names") if name == VERIFY_RETRY else "none"
    if feedback not in FEEDBACK_LEVELS:
        raise ValueError(f"--loop-strategy {given!r}: feedback must be one of {', '.join(FEEDBACK_LEVELS)}")
    return LoopStrategy(name=name, k=int(raw_k), feedback=feedback)


def filter_feedback(output: str, level: str, max_chars: int = MAX_FEEDBACK_CHARS) -> str:
    """The soft verifier's ``output`` reduced to what ``level`` lets reach the agent.

    ``names`` keeps only tokens that look like pytest node ids (``::`` or ``.py``), so a log line that
    happens to start with ``ERROR`` is not passed on, and drops parametrize ids (``test_x[42]``), which
    may hold expected values; with no such line it gives nothing.
    """
    text = (output or "").strip()
    if level == "none" or not text:
        return ""
    if level == "raw":
        return text[:max_chars]
    failing = list(dict.fromkeys(_PARAM_ID.sub("", token) for token in _FAILED.findall(text)
                                 if "::" in token or token.endswith(".py")))
    if level == "counts":
        summaries = _SUMMARY.findall(text)
        if summaries:
            return summaries[-1].strip()[:max_chars]
        return f"{len(failing)} failing test(s)" if failing else ""
    return "\n".join(failing)[:max_chars]
