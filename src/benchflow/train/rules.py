"""The row rules of contracts §8.3, applied to one conversation.

- Roles: system, user, assistant and tool only (``developer`` is a system
  message; any other role is dropped).
- Message keys: only ``role``, ``content``, ``tool_calls``, ``tool_call_id`` and
  ``name`` are kept, so the banned ones (``reasoning_content``,
  ``thinking_blocks``, ``private_reasoning``, ``provider_specific_fields``,
  ``function_call``) never reach a row.
- Tool-call ids: every assistant tool call gets an id unique in the row (a
  missing or repeated one is rewritten to ``call_<n>``) and every tool message
  answers a call made before it (a repeated id answers the oldest unanswered
  call that had it, a missing or unknown id the oldest unanswered call);
  consecutive tool messages answering a call already answered are merged.
- The training window (prime-sft rows): the leading system messages, then
  everything from the last user message on (what the agent did for the
  instruction it was last given). The other formats keep the whole
  conversation (trl-sft can cut it to a token budget with ``--context-policy
  message-window``).

:class:`Counts` tallies what was rewritten, for the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ROLES = frozenset({"system", "user", "assistant", "tool"})
MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
BANNED_MESSAGE_KEYS = frozenset({"reasoning_content", "thinking_blocks", "private_reasoning",
                                 "provider_specific_fields", "function_call"})
BANNED_ROW_KEYS = frozenset({"gold", "gold_solution", "verify_source", "tools_py", "initial_db", "db_json",
                             "target_constants", "private_reasoning", "reasoning_content", "thinking_blocks"})


@dataclass
class Counts:
    tool_call_ids_rewritten: int = 0
    tool_messages_merged: int = 0
    messages_dropped: int = 0


def _clean(message: dict[str, Any], counts: Counts) -> dict[str, Any] | None:
    role = "system" if message.get("role") == "developer" else message.get("role")
    if role not in ROLES:
        counts.messages_dropped += 1
        return None
    out: dict[str, Any] = {"role": role, "content": message.get("content")}
    if out["content"] is None:
        out["content"] = ""
    if role == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = [{"id": c.get("id"), "type": "function",
                              "function": {"name": (c.get("function") or {}).get("name") or "",
                                           "arguments": (c.get("function") or {}).get("arguments") or "{}"}}
                             for c in message["tool_calls"] if isinstance(c, dict)]
    if role == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
    if isinstance(message.get("name"), str) and role in ("tool", "user"):
        out["name"] = message["name"]
    return out


def _fix_tool_ids(messages: list[dict[str, Any]], counts: Counts) -> list[dict[str, Any]]:
    used: set[str] = set()
    pending: list[tuple[Any, str]] = []
    """Calls not answered yet: (the id the agent saw, the id in the row), oldest first."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message["role"] == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                seen = call.get("id")
                if not isinstance(seen, str) or not seen or seen in used:
                    new = f"call_{len(used) + 1}"
                    while new in used:
                        new += "_"
                    counts.tool_call_ids_rewritten += 1
                    call["id"] = new
                used.add(call["id"])
                pending.append((seen, call["id"]))
        elif message["role"] == "tool":
            given = message.get("tool_call_id")
            previous = out[-1] if out else None
            if previous is not None and previous["role"] == "tool" and previous["_answers"] == given \
                    and not any(seen == given for seen, _ in pending):
                previous["content"] = f"{previous['content']}\n{message['content']}"
                counts.tool_messages_merged += 1
                continue
            match = next((entry for entry in pending if given in entry), None)
            if match is None:
                if not pending:
                    counts.messages_dropped += 1
                    continue
                match = pending[0]
            pending.remove(match)
            if match[1] != given:
                message["tool_call_id"] = match[1]
                counts.tool_call_ids_rewritten += 1
            message["_answers"] = given
        out.append(message)
    for message in out:
        message.pop("_answers", None)
    return out


def window(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leading system messages plus everything from the last user message on."""
    lead = 0
    while lead < len(messages) and messages[lead]["role"] == "system":
        lead += 1
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=lead)
    return messages[:lead] + messages[max(last_user, lead):]


def apply(messages: list[dict[str, Any]], counts: Counts, *, trim: bool = True) -> list[dict[str, Any]]:
    """The conversation as a row holds it (rules above), ending in the assistant's answer.

    ``trim`` cuts it to the last-user window (prime-sft rows); the other formats keep it whole."""
    cleaned = [m for m in (_clean(m, counts) for m in messages) if m is not None]
    fixed = _fix_tool_ids(cleaned, counts)
    return window(fixed) if trim else fixed


CONVERSATION_KEYS = frozenset({"messages", "prompt", "completion", "tools", "tool_defs", "steps"})
"""Row keys holding the conversation and tool schemas: their keys are already limited (messages) or are
the tools' own parameter names, which a banned word must not cut out of a schema."""


def strip_banned(obj: Any, top: bool = True) -> Any:
    """``obj`` without any banned row key, at any depth outside the conversation."""
    if isinstance(obj, dict):
        return {k: v if top and k in CONVERSATION_KEYS else strip_banned(v, False)
                for k, v in obj.items() if k not in BANNED_ROW_KEYS}
    if isinstance(obj, list):
        return [strip_banned(v, False) for v in obj]
    return obj


def has_tool_calls(messages: list[dict[str, Any]]) -> bool:
    return any(m.get("tool_calls") for m in messages if isinstance(m, dict))
