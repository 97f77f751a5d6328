"""The ``bench explain`` catalogue: why a trial has no score, whose problem it is, what to do next.

The entries live in ``explain.toml`` beside this module (data, not code).
Named codes are the primary keys; R-numbers are aliases.
"""

from __future__ import annotations

import difflib
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from benchflow.categories import classify_error, classify_verifier_error
from benchflow.errors import UserError
from benchflow.records import TrialResult, as_result

CATALOGUE = Path(__file__).with_name("explain.toml")
Fault = Literal["task", "agent", "infrastructure", "setup"]


class ExplainEntry(BaseModel):
    code: str
    aliases: list[str] = []
    label: str
    fault: Fault
    happened: str
    next: str

    def filled(self, job: str | None = None, task: str | None = None) -> "ExplainEntry":
        """The entry with ``{job}`` / ``{task}`` replaced where known (left as written otherwise)."""
        values = {"job": job, "task": task}

        def fill(text: str) -> str:
            for key, value in values.items():
                if value:
                    text = text.replace("{" + key + "}", value)
            return text

        return self.model_copy(update={"label": fill(self.label), "happened": fill(self.happened),
                                       "next": fill(self.next)})


class UnknownCode(UserError):
    """``bench explain CODE`` with a code the catalogue does not hold (exit 2)."""


@lru_cache(maxsize=1)
def catalogue() -> tuple[ExplainEntry, ...]:
    with open(CATALOGUE, "rb") as handle:
        data = tomllib.load(handle)
    return tuple(ExplainEntry(**row) for row in data["code"])


def _index() -> dict[str, ExplainEntry]:
    index: dict[str, ExplainEntry] = {}
    for entry in catalogue():
        for key in (entry.code, *entry.aliases):
            index[key.lower()] = entry
    return index


def lookup(code: str, *, job: str | None = None, task: str | None = None) -> ExplainEntry:
    """The entry for ``code`` (a category such as ``verifier_failure`` or an alias such as ``R212``).

    Raises:
        UnknownCode: no entry; the message lists close matches.
    """
    index = _index()
    entry = index.get(code.strip().lower())
    if entry is None:
        close = difflib.get_close_matches(code.strip().lower(), list(index), n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownCode(f"unknown code {code!r}{hint} Run `bench explain` to list every code.")
    return entry.filled(job=job, task=task)


def code_for(result: TrialResult | dict[str, Any]) -> str | None:
    """The catalogue code that explains one ``result.json``; ``None`` when it has a reward and no error.

    The verifier category wins when there is no reward (it is why there is no
    score); a pipe closed by the agent's own exit gets ``pipe_closed:exit``.
    A result without stored categories (BenchFlow 0.7) is classified from its messages.
    """
    result = as_result(result)
    scored = result.reward is not None
    verifier = result.verifier_error_category or classify_verifier_error(result.verifier_error or None)
    agent = result.error_category or classify_error(result.error or None)
    if not scored and verifier:
        return verifier
    if agent == "pipe_closed":
        info = result.transport_error_info or {}
        return "pipe_closed:exit" if info.get("process_exit_code") else agent
    if agent == "agent_integration":
        cause = (result.integration_failure_info or {}).get("cause")
        return f"agent_integration:{cause}" if cause else agent
    if agent:
        return agent
    return None if scored else "no_verdict"


def explain_trial(path: Path) -> tuple[str | None, ExplainEntry | None]:
    """``(code, entry)`` for a trial folder's result.json; ``(None, None)`` when it scored cleanly.

    Raises:
        UserError: ``path`` has no readable result.json.
    """
    from benchflow.jobs.layout import TrialPaths
    from benchflow.records import Unreadable, read_record

    trial = TrialPaths(path)
    try:
        result = read_record(TrialResult, trial.result, name=trial.name)
    except Unreadable as exc:
        raise UserError(str(exc)) from exc
    if result is None:
        raise UserError(f"{trial.result}: missing; the trial has not finished (bench explain no_verdict)")
    code = code_for(result)
    if code is None:
        return None, None
    return code, lookup(code, job=str(path.parent), task=result.task_name)


def as_json(entry: ExplainEntry) -> dict[str, Any]:
    return entry.model_dump(mode="json")
