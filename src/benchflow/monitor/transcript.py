"""The rollout a monitor judges, read from any trajectory BenchFlow knows, as conversation turns.

Three kinds, told apart by their content (never by the file name):

- ``acp``: agent events, one JSON object a line with a ``type`` (``trajectory/acp_trajectory.jsonl``,
  contracts §3.5); folded as the run folds them (:func:`benchflow.interop.turns.turns_of`).
- ``llm``: recorded model calls, one ``{"request", "response", ...}`` a line
  (``trajectory/llm_trajectory.jsonl``). Each call re-sends its conversation, so the parent agent's last
  call answered 200 holds the whole of it (:mod:`benchflow.train.chat`); subagents' calls
  (:mod:`benchflow.train.threads`) are left out, with a note.
- ``atif``: an ATIF trajectory document (a Harbor trial's ``agent/trajectory.json``), read by
  :mod:`benchflow.interop.atif_read`.

Every turn ends up a :class:`benchflow.interop.turns.Turn`, the shape the exports and training rows use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import UserError
from benchflow.interop.turns import ToolUse, Turn

READS = "ACP events JSONL (acp_trajectory.jsonl), model calls JSONL (llm_trajectory.jsonl) or an ATIF trajectory.json"


@dataclass
class Transcript:
    kind: str
    """``acp``, ``llm`` or ``atif``."""
    turns: list[Turn]
    notes: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """What a verdict keeps about it: its kind and size (the trajectory itself stays where it is)."""
        return {"kind": self.kind, "turns": len(self.turns),
                "tool_calls": sum(len(turn.tools) for turn in self.turns)}


def from_events(events: Iterable[dict[str, Any]]) -> Transcript:
    from benchflow.interop.turns import turns_of

    return Transcript("acp", turns_of(events))


def from_exchanges(exchanges: list[dict[str, Any]], where: str) -> Transcript:
    """The parent agent's conversation in recorded model calls.

    Raises:
        UserError: no call answered 200, or the last one holds no answer.
    """
    from benchflow.train.chat import conversation
    from benchflow.train.source import is_ok_call
    from benchflow.train.threads import split

    threads = split([(i, e) for i, e in enumerate(exchanges) if is_ok_call(e)])
    if not threads:
        raise UserError(f"{where}: no model call answered 200 in {len(exchanges)} recorded; nothing to judge")
    found = conversation(threads[0].exchanges[-1][1])
    if found is None:
        raise UserError(f"{where}: the last model call answered 200 holds no answer; nothing to judge")
    notes = [f"{len(threads) - 1} subagent conversation(s) left out"] if len(threads) > 1 else []
    return Transcript("llm", turns_of_messages(found[0]), notes)


def from_atif(document: Any, where: str) -> Transcript:
    """Raises: UserError: not an ATIF trajectory (the reader's one line says which field)."""
    from benchflow.interop.atif_read import conversation
    from benchflow.records import Unreadable

    try:
        return Transcript("atif", conversation(document, where).turns)
    except Unreadable as exc:
        raise UserError(str(exc)) from None


def _arguments(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {"input": text}
    return value if isinstance(value, dict) else {"input": value}


def turns_of_messages(messages: list[dict[str, Any]]) -> list[Turn]:
    """OpenAI chat messages as turns: an assistant message with its tool calls is an agent turn, each
    ``tool`` message the output of the call it names (a turn of its own when it names none)."""
    turns: list[Turn] = []
    calls: dict[str, ToolUse] = {}
    for message in messages:
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else "" if content is None else json.dumps(content)
        if role == "assistant":
            tools = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                use = ToolUse(id=str(call.get("id")), name=str(function.get("name") or "tool"),
                              arguments=_arguments(function.get("arguments")), output=None, failed=False, extra={})
                calls[use.id] = use
                tools.append(use)
            turns.append(Turn("agent", message=text, tools=tools))
        elif role == "tool" and str(message.get("tool_call_id")) in calls:
            calls[str(message.get("tool_call_id"))].output = text
        elif role == "tool":
            turns.append(Turn("user", message=text, extra={"tool_result_of": message.get("tool_call_id")}))
        else:
            turns.append(Turn("system" if role == "system" else "user", message=text))
    return turns


def _objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL text; a line that is not one becomes an ``unparsed`` event."""
    out: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        out.append(value if isinstance(value, dict) else {"type": "unparsed", "line": number})
    return out


def kind_of(first: dict[str, Any]) -> str | None:
    """``llm`` or ``acp`` from a JSONL file's first object, None when it is neither."""
    if "request" in first and "response" in first:
        return "llm"
    if isinstance(first.get("type"), str) and first["type"] != "unparsed":
        return "acp"
    return None


def read_file(path: Path) -> Transcript:
    """The trajectory in the file at ``path``, whichever kind it is.

    Raises:
        UserError: missing, a folder, empty, or none of the kinds this reads.
    """
    if path.is_dir():
        raise UserError(f"{path}: a folder; give a trajectory file ({READS}), or use "
                        "'bench monitor replay' for a trial folder")
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; give a trajectory file ({READS})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror})") from None
    if not text.strip():
        raise UserError(f"{path}: empty; give a trajectory file ({READS})")
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and str(whole.get("schema_version") or "").startswith("ATIF-"):
        return from_atif(whole, str(path))
    objects = [whole] if isinstance(whole, dict) else _objects(text)
    first = next((o for o in objects if o.get("type") != "unparsed"), None)
    kind = kind_of(first) if first is not None else None
    if kind == "llm":
        return from_exchanges(objects, str(path))
    if kind == "acp":
        return from_events(objects)
    raise UserError(f"{path}: not a trajectory this reads; give {READS}")
