"""``claude -p --output-format stream-json --verbose`` lines → trajectory events.

The CLI prints one JSON object per line: ``system`` (``subtype: init`` carries
the ``session_id``), ``assistant`` (a whole model message whose content blocks
are ``text``, ``thinking`` and ``tool_use``), ``user`` (``tool_result`` blocks
answering earlier ``tool_use`` ids) and a final ``result`` (``is_error``,
``subtype``, ``usage``, ``total_cost_usd``). A ``tool_use`` starts a tool call
(in progress: the CLI runs it right away) and its ``tool_result`` finishes it
in place, as ``tool_call_update`` does over ACP. Other line types (partial
``stream_event`` deltas, hooks, compaction notices) carry nothing the stored
trajectory keeps.
"""

from __future__ import annotations

from typing import Any

_KINDS = {"bash": "execute", "bashoutput": "execute", "killshell": "execute", "read": "read",
          "write": "edit", "edit": "edit", "multiedit": "edit", "notebookedit": "edit",
          "grep": "search", "glob": "search", "ls": "search", "webfetch": "fetch", "websearch": "fetch",
          "task": "think", "todowrite": "think", "exitplanmode": "switch_mode", "skill": "skill"}
"""Claude Code tool names (lowercased) → ACP tool kinds; anything else is ``other``."""

_USAGE = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
          "cache_read_input_tokens": "cached_read_tokens", "cache_creation_input_tokens": "cached_write_tokens"}
"""The CLI's usage keys → the names an ACP ``PromptResponse.usage`` reports."""


def tool_kind(name: str) -> str:
    return _KINDS.get(name.lower(), "other")


def tool_title(name: str, args: Any) -> str:
    """What the call did in a few words: the command, the path or the pattern when the input names one."""
    if isinstance(args, dict):
        for key in ("command", "file_path", "notebook_path", "pattern", "url", "query", "description", "skill"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return value if key == "command" else f"{name} {value}"
    return name


def text_content(value: Any) -> list[dict[str, Any]]:
    """A tool result (a string or a list of content blocks) as ACP tool-call content."""
    if isinstance(value, str):
        texts = [value]
    elif isinstance(value, list):
        texts = [b.get("text", "") if isinstance(b, dict) and b.get("type") == "text"
                 else f"[{b.get('type', 'content')}]" if isinstance(b, dict) else str(b) for b in value]
    else:
        texts = [] if value is None else [str(value)]
    return [{"type": "content", "content": {"type": "text", "text": t}} for t in texts]


class ClaudeStreamParser:
    """One process's stdout: ``feed`` each decoded line, collect the events it yields."""

    usage_is_cumulative = False
    """``result`` usage counts this process's run only (a resumed session starts from zero) ..."""
    cost_is_cumulative = True
    """... while ``total_cost_usd`` counts the whole session, earlier runs of a resumed one included."""

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.usage: dict[str, int] = {}
        self.finished = False
        """A ``result`` line arrived (the CLI reported the end of the prompt)."""
        self.error: str | None = None
        """What the CLI reported as failing (its own words), if it did."""
        self.cost_usd: float | None = None

    def feed(self, line: dict[str, Any]) -> list[dict[str, Any]]:
        kind = line.get("type")
        if isinstance(line.get("session_id"), str):
            self.session_id = line["session_id"]
        if kind == "assistant":
            return self._assistant(line.get("message") or {})
        if kind == "user":
            return self._tool_results(line.get("message") or {})
        if kind == "result":
            self._result(line)
        return []

    def done(self) -> None:
        """The process ended (nothing to settle: ``result`` carries the outcome)."""

    def _assistant(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for block in _blocks(message):
            btype = block.get("type")
            if btype == "text" and block.get("text"):
                events.append({"type": "agent_message", "text": block["text"]})
            elif btype == "thinking" and block.get("thinking"):
                events.append({"type": "agent_thought", "text": block["thinking"]})
            elif btype in ("tool_use", "server_tool_use"):
                name = str(block.get("name") or "tool")
                events.append({"type": "tool_call", "tool_call_id": str(block.get("id")),
                               "title": tool_title(name, block.get("input")), "kind": tool_kind(name),
                               "status": "in_progress", "raw_input": block.get("input")})
        return events

    def _tool_results(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        events = []
        for block in _blocks(message):
            if block.get("type") != "tool_result":
                continue
            events.append({"type": "tool_call_update", "tool_call_id": str(block.get("tool_use_id")),
                           "status": "failed" if block.get("is_error") else "completed",
                           "content": text_content(block.get("content"))})
        return events

    def _result(self, line: dict[str, Any]) -> None:
        self.finished = True
        for key, name in _USAGE.items():
            value = (line.get("usage") or {}).get(key)
            if isinstance(value, int):
                self.usage[name] = self.usage.get(name, 0) + value
        if self.usage:
            self.usage["total_tokens"] = sum(v for k, v in self.usage.items() if k != "total_tokens")
        if isinstance(line.get("total_cost_usd"), (int, float)):
            self.cost_usd = float(line["total_cost_usd"])
        if line.get("subtype") == "error_max_turns":  # flagged is_error, yet ACP's max_turn_requests stop
            return
        if line.get("is_error") or line.get("subtype", "success") != "success":
            errors = line.get("errors")
            detail = line.get("result") or ("; ".join(map(str, errors)) if isinstance(errors, list) and errors
                                            else None)
            self.error = f"{line.get('subtype') or 'error'}: {detail}" if detail else str(line.get("subtype"))


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]
