"""``codex exec --json`` lines → trajectory events.

The CLI prints one JSON object per line: ``thread.started`` (``thread_id``, the
id ``codex exec resume`` takes), ``turn.started``, ``item.started`` /
``item.updated`` / ``item.completed`` (an ``item`` with an ``id`` and a
``type``: ``agent_message``, ``reasoning``, ``command_execution``,
``file_change``, ``mcp_tool_call``, ``web_search``, ``todo_list``, ``error``),
then ``turn.completed`` (``usage``, the thread's running totals) or ``turn.failed`` (``error.message``); a
top-level ``error`` line reports a stream failure. Early releases spelled the
item type ``item_type`` and the message ``assistant_message``; both are read.

Messages and reasoning are taken when their item completes (that is when the
text is whole). Tool-like items become one tool call updated in place. Item
ids restart at ``item_0`` in every process, so each id is prefixed with the
prompt number to stay unique across a resumed conversation.
"""

from __future__ import annotations

from typing import Any

from .native_claude import text_content

_TOOL_KINDS = {"command_execution": "execute", "file_change": "edit", "mcp_tool_call": "other",
               "web_search": "fetch"}
_USAGE = {"input_tokens": "input_tokens", "cached_input_tokens": "cached_read_tokens",
          "cache_write_input_tokens": "cached_write_tokens", "output_tokens": "output_tokens",
          "reasoning_output_tokens": "thought_tokens"}
"""The CLI's usage keys → the names an ACP ``PromptResponse.usage`` reports."""
_STATUS = {"in_progress": "in_progress", "completed": "completed", "failed": "failed", "declined": "failed"}


class CodexExecParser:
    """One process's stdout: ``feed`` each decoded line, collect the events it yields."""

    usage_is_cumulative = True
    """``turn.completed`` usage counts the whole thread so far (a resumed thread included)."""
    cost_is_cumulative = True
    """No cost is reported (``cost_usd`` stays None)."""

    def __init__(self, prompt_no: int = 1) -> None:
        self.prefix = f"p{prompt_no}:"
        self.session_id: str | None = None
        self.usage: dict[str, int] = {}
        self.finished = False
        """``turn.completed`` or ``turn.failed`` arrived."""
        self.error: str | None = None
        self.cost_usd: float | None = None
        self._stream_error: str | None = None
        self._started: set[str] = set()

    def feed(self, line: dict[str, Any]) -> list[dict[str, Any]]:
        kind = line.get("type")
        if kind in ("thread.started", "thread.resumed") and isinstance(line.get("thread_id"), str):
            self.session_id = line["thread_id"]
        elif kind in ("item.started", "item.updated", "item.completed") and isinstance(line.get("item"), dict):
            return self._item(kind.split(".", 1)[1], line["item"])
        elif kind == "turn.completed":
            self.finished = True
            self._add_usage(line.get("usage"))
        elif kind == "turn.failed":
            self.finished = True
            self._add_usage(line.get("usage"))
            self.error = _message(line.get("error")) or self._stream_error or "turn failed"
        elif kind == "error":
            self._stream_error = _message(line) or "stream error"
        return []

    def done(self) -> None:
        """The process ended: a stream error with no completed turn is the prompt's failure."""
        if self.error is None and self._stream_error and not self.finished:
            self.error = self._stream_error

    def _item(self, phase: str, item: dict[str, Any]) -> list[dict[str, Any]]:
        itype = item.get("type") or item.get("item_type")
        if itype in ("agent_message", "assistant_message"):
            return [{"type": "agent_message", "text": item.get("text", "")}] if phase == "completed" else []
        if itype == "reasoning":
            return [{"type": "agent_thought", "text": item.get("text", "")}] if phase == "completed" else []
        if itype not in _TOOL_KINDS:
            return []
        call_id = self.prefix + str(item.get("id"))
        status = _STATUS.get(str(item.get("status")), "completed" if phase == "completed" else "in_progress")
        if itype == "command_execution" and phase == "completed" and item.get("exit_code") not in (None, 0):
            status = "failed"
        event: dict[str, Any] = {"type": "tool_call" if call_id not in self._started else "tool_call_update",
                                 "tool_call_id": call_id, "status": status}
        if call_id not in self._started:
            self._started.add(call_id)
            event.update(title=_title(itype, item), kind=_TOOL_KINDS[itype], raw_input=_input(itype, item))
        output = _output(itype, item)
        if output is not None:
            event["content"] = text_content(output)
        if itype == "command_execution" and item.get("exit_code") is not None:
            event["raw_output"] = {"exit_code": item["exit_code"]}
        return [event]

    def _add_usage(self, usage: Any) -> None:
        """Keep the latest thread totals (each report supersedes the one before)."""
        latest = {name: (usage or {})[key] for key, name in _USAGE.items() if isinstance((usage or {}).get(key), int)}
        if latest:
            latest["total_tokens"] = latest.get("input_tokens", 0) + latest.get("output_tokens", 0)
            self.usage = latest


def _message(value: Any) -> str | None:
    if isinstance(value, dict) and value.get("message"):
        return str(value["message"])
    return None


def _title(itype: str, item: dict[str, Any]) -> str:
    if itype == "command_execution":
        return str(item.get("command") or "command")
    if itype == "file_change":
        paths = [str(c.get("path")) for c in item.get("changes") or [] if isinstance(c, dict)]
        return "Edit " + ", ".join(paths) if paths else "Edit files"
    if itype == "mcp_tool_call":
        return f"{item.get('server')}.{item.get('tool')}"
    return f"Search {item.get('query', '')}".strip()


def _input(itype: str, item: dict[str, Any]) -> Any:
    if itype == "command_execution":
        return {"command": item.get("command")}
    if itype == "file_change":
        return {"changes": item.get("changes")}
    if itype == "mcp_tool_call":
        return item.get("arguments")
    return {"query": item.get("query")}


def _output(itype: str, item: dict[str, Any]) -> Any:
    if itype == "command_execution":
        return item.get("aggregated_output") or None
    if itype == "mcp_tool_call":
        return (item.get("error") or {}).get("message") if item.get("error") else item.get("result")
    return None
