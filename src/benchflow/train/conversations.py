"""The conversations of a rollout that rows are made of, from whichever record the trial kept.

- A BenchFlow trial: its model calls, ``trajectory/llm_trajectory.jsonl`` (each call answered 200 is one
  exchange, :mod:`.chat` reads its request and answer as messages); with ``--subagent-rows`` each subagent's
  calls too (:mod:`.threads`), tagged with the parent's spawning call. ``exchange_index`` is the call's line.
- A Harbor trial (no model calls recorded): its agent's ATIF trajectory, ``agent/trajectory.json``
  (:mod:`.atif`: each agent step that called the model is one exchange). ``exchange_index`` is the step's
  ``step_id``; the rows' ``source`` is ``atif-trajectory``. Subagent trajectories are not read.

``--row-mode rollout`` takes the last exchange (its messages hold the whole conversation), ``exchange``
every one. What cannot become a row is counted in ``stats.skipped`` (``provider_error``: no call answered
200; ``no_answer``: none that holds an answer; ``unreadable_trajectory``: an ATIF file that is not one, with
a note saying why).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchflow.interop import atif_read
from benchflow.records import Unreadable

from . import atif
from .chat import conversation
from .formats import SOURCE as LLM_SOURCE
from .source import Rollout, is_ok_call, last_model_call, read_exchanges
from .threads import split

if TYPE_CHECKING:
    from .convert import ConvertOptions, Stats

ATIF_SOURCE = "atif-trajectory"


@dataclass
class Conversation:
    """One conversation a row is built from, ending in the answer trained on."""

    index: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    source: str
    source_path: str
    subagent: dict[str, Any] | None = None


def has_record(rollout: Rollout) -> bool:
    """Whether the trial kept model calls or an ATIF trajectory to make rows of."""
    return rollout.trial.llm_trajectory.is_file() or rollout.trial.atif_trajectory.is_file()


def conversations(rollout: Rollout, o: ConvertOptions, stats: Stats) -> Iterator[Conversation]:
    """The rollout's conversations, as ``--row-mode`` and ``--subagent-rows`` ask."""
    if rollout.trial.llm_trajectory.is_file():
        yield from _from_model_calls(rollout, o, stats)
    else:
        yield from _from_atif(rollout, o, stats)


def _exchanges(rollout: Rollout, o: ConvertOptions,
               stats: Stats) -> list[tuple[int, dict[str, Any], dict[str, Any] | None]]:
    """(index, exchange, subagent tag) of the calls to make rows of."""
    path = rollout.trial.llm_trajectory
    if o.row_mode == "rollout" and not o.subagent_rows:  # the parent's last call ends the rollout
        lines, index, exchange = last_model_call(path)
        stats.exchanges_seen += lines
        return [] if exchange is None else [(index, exchange, None)]
    found = read_exchanges(path)
    stats.exchanges_seen += len(found)
    threads = split([(i, e) for i, e in found if e is not None and is_ok_call(e)])
    out = []
    for number, thread in enumerate(threads if o.subagent_rows else threads[:1]):
        tag = None if number == 0 else {"thread": number, **(thread.spawned_by or {})}
        calls = thread.exchanges[-1:] if o.row_mode == "rollout" else thread.exchanges
        out += [(index, exchange, tag) for index, exchange in calls]
    return out if o.row_mode == "rollout" else sorted(out, key=lambda item: item[0])  # exchanges: call order


def _from_model_calls(rollout: Rollout, o: ConvertOptions, stats: Stats) -> Iterator[Conversation]:
    exchanges = _exchanges(rollout, o, stats)
    if not exchanges:
        stats.skipped["provider_error"] += 1
        return
    source_path = f"{rollout.rel}/trajectory/llm_trajectory.jsonl"
    for index, exchange, subagent in exchanges:
        found = conversation(exchange)
        if found is None:
            stats.skipped["no_answer"] += 1
            continue
        messages, tools = found
        yield Conversation(index, messages, tools, LLM_SOURCE, source_path, subagent)


def _from_atif(rollout: Rollout, o: ConvertOptions, stats: Stats) -> Iterator[Conversation]:
    try:
        read = atif_read.read(rollout.trial.atif_trajectory)
    except Unreadable as exc:
        stats.skipped["unreadable_trajectory"] += 1
        stats.notes.append(str(exc))
        return
    exchanges = atif.exchanges(read)
    stats.exchanges_seen += len(exchanges)
    if not exchanges:
        stats.skipped["no_answer"] += 1
        return
    source_path = f"{rollout.rel}/agent/trajectory.json"
    for exchange in exchanges[-1:] if o.row_mode == "rollout" else exchanges:
        yield Conversation(exchange.step_id, exchange.messages, read.tools, ATIF_SOURCE, source_path)
