"""Agent traces read into one shape, from the formats ``bench tasks generate`` accepts.

- ``claude-code``: a Claude Code session file (``~/.claude/projects/<project>/<session>.jsonl``):
  one JSON event per line (``type`` user/assistant, ``message`` with text / ``tool_use`` blocks, ``cwd``).
- ``claude-messages``: one row holding ``messages`` in the Anthropic Messages shape.
- ``opentraces``: one row per trace: an id, ``steps`` (or ``messages``) of ``{role, content,
  tool_calls: [{name, arguments|input}]}`` and an ``outcome`` (``success``/``failure``, or a
  ``success`` boolean / ``reward``).

What a task needs from a trace: the first user prompt, the number of steps, the
outcome, and the files the agent wrote (a ``Write``/``write_file``/
``create_file`` tool call's path and content; the last write of a path wins),
as paths relative to the session's working folder. Nothing here is trusted:
paths leaving that folder are dropped, and the generator redacts every text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

FORMATS = ("auto", "claude-code", "opentraces", "claude-messages")
WRITE_TOOLS = {"write", "write_file", "create_file", "str_replace_based_edit_tool.create"}
OUTCOMES = ("success", "failure", "unknown")


@dataclass
class Trace:
    trace_id: str
    format: str
    prompt: str = ""
    steps: list[str] = field(default_factory=list)
    """One short label per step (a message or a tool call)."""
    outputs: dict[str, str] = field(default_factory=dict)
    """Relative path -> final content of the files the agent wrote."""
    outcome: str = "unknown"
    cwd: str | None = None

    @property
    def title(self) -> str:
        first = next((line.strip() for line in self.prompt.splitlines() if line.strip()), "")
        return first[:80]


def detect_format(record: dict[str, Any]) -> str:
    """The format of one JSON record (a session event or a dataset row)."""
    if "message" in record and record.get("type") in ("user", "assistant", "system", "summary"):
        return "claude-code"
    if isinstance(record.get("steps"), list) or "outcome" in record or "trace_id" in record:
        return "opentraces"
    if isinstance(record.get("messages"), list):
        return "claude-messages"
    return "unknown"


def from_session(trace_id: str, events: list[dict[str, Any]]) -> Trace:
    """A Claude Code session (its events in order)."""
    trace = Trace(trace_id=trace_id, format="claude-code")
    for event in events:
        trace.cwd = trace.cwd or event.get("cwd")
        message = event.get("message")
        if isinstance(message, dict) and event.get("type") in ("user", "assistant"):
            _add_message(trace, message.get("role") or event["type"], message.get("content"))
    return _relative_outputs(trace)


def from_row(trace_id: str, row: dict[str, Any], fmt: str) -> Trace:
    """One dataset row in ``fmt`` (``claude-messages`` or ``opentraces``)."""
    trace = Trace(trace_id=str(row.get("trace_id") or row.get("id") or row.get("session_id") or trace_id),
                  format=fmt, cwd=row.get("cwd") if isinstance(row.get("cwd"), str) else None)
    items = row.get("steps") if isinstance(row.get("steps"), list) else row.get("messages")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        _add_message(trace, str(item.get("role") or "assistant"), item.get("content"))
        for call in item.get("tool_calls") or []:
            if isinstance(call, dict):
                fn = call.get("function") if isinstance(call.get("function"), dict) else call
                _add_tool(trace, str(fn.get("name") or ""), _arguments(fn.get("arguments", fn.get("input"))))
    if not trace.prompt and isinstance(row.get("task") or row.get("prompt"), str):
        trace.prompt = row.get("task") or row.get("prompt")
    trace.outcome = _outcome(row)
    return _relative_outputs(trace)


def _add_message(trace: Trace, role: str, content: Any) -> None:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            if role == "user" and not trace.prompt:
                trace.prompt = block["text"]
            trace.steps.append(f"{role}: text")
        elif kind == "tool_use":
            _add_tool(trace, str(block.get("name") or ""), _arguments(block.get("input")))


def _add_tool(trace: Trace, name: str, args: dict[str, Any]) -> None:
    trace.steps.append(f"tool: {name}")
    if name.lower() in WRITE_TOOLS or name.lower().endswith(".create"):
        path = args.get("file_path") or args.get("path")
        content = args.get("content", args.get("file_text"))
        if isinstance(path, str) and isinstance(content, str):
            trace.outputs[path] = content


def _arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _outcome(row: dict[str, Any]) -> str:
    value = row.get("outcome")
    if isinstance(value, str) and value.lower() in OUTCOMES:
        return value.lower()
    if isinstance(row.get("success"), bool):
        return "success" if row["success"] else "failure"
    reward = row.get("reward")
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        return "success" if reward >= 1 else "failure"
    return "unknown"


def _relative_outputs(trace: Trace) -> Trace:
    """Keep only outputs inside the working folder, as clean relative POSIX paths."""
    kept: dict[str, str] = {}
    base = PurePosixPath(trace.cwd) if trace.cwd and trace.cwd.startswith("/") else None
    for raw, content in trace.outputs.items():
        path = PurePosixPath(raw)
        if path.is_absolute():
            if base is None or not path.is_relative_to(base):
                continue
            path = path.relative_to(base)
        if not path.parts or ".." in path.parts or path.parts[0] in (".", ""):
            continue
        kept[path.as_posix()] = content
    trace.outputs = kept
    return trace
