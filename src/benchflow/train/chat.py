"""One recorded exchange as OpenAI chat messages plus the tools it offered.

The conversation is the request's messages followed by the assistant message
the provider answered. Anthropic Messages and OpenAI Responses calls are
translated into the same shape, so every trainer format reads one shape:

- Messages: ``system`` becomes a system message; ``tool_use`` blocks become
  ``tool_calls`` (arguments as JSON text); each ``tool_result`` block becomes a
  ``tool`` message; thinking blocks are private reasoning and are dropped.
- Responses: ``instructions`` becomes a system message; ``function_call``
  items join the assistant message before them; ``function_call_output``
  items become ``tool`` messages; reasoning items are dropped.

Content made of text parts is joined into one string; other parts (images,
files) are dropped, since the text trainers read cannot hold them.
"""

from __future__ import annotations

import json
from typing import Any


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str) \
                    and part.get("type") in (None, "text", "input_text", "output_text"):
                parts.append(part["text"])
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False)


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {}, ensure_ascii=False)


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"id": call_id if isinstance(call_id, str) else None, "type": "function",
            "function": {"name": str(name or ""), "arguments": _arguments(arguments)}}


# --- OpenAI Chat Completions -------------------------------------------------------------
def _chat_message(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    if "content" in out:
        out["content"] = _text(out["content"])
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [_tool_call(c.get("id"), (c.get("function") or {}).get("name"),
                                        (c.get("function") or {}).get("arguments"))
                             for c in calls if isinstance(c, dict)]
    return out


def _chat(request: dict[str, Any], response: dict[str, Any]) -> list[dict[str, Any]] | None:
    messages = [_chat_message(m) for m in request.get("messages") or [] if isinstance(m, dict)]
    choices = response.get("choices") or []
    if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        return None
    return messages + [_chat_message(choices[0]["message"])]


# --- Anthropic Messages ------------------------------------------------------------------
def _anthropic_turn(role: str, content: Any) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return [{"role": role, "content": _text(content)}]
    texts, calls, results = [], [], []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_use":
            calls.append(_tool_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":
            results.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                            "content": _text(block.get("content")) or ""})
    out = list(results)
    if texts or calls or not results:
        message: dict[str, Any] = {"role": role, "content": "".join(texts)}
        if calls:
            message["tool_calls"] = calls
        out.append(message)
    return out


def _messages(request: dict[str, Any], response: dict[str, Any]) -> list[dict[str, Any]] | None:
    out: list[dict[str, Any]] = []
    if request.get("system"):
        out.append({"role": "system", "content": _text(request["system"])})
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            out.extend(_anthropic_turn(str(message.get("role")), message.get("content")))
    if response.get("type") == "error" or not isinstance(response.get("content"), list):
        return None
    return out + _anthropic_turn("assistant", response["content"])


# --- OpenAI Responses ----------------------------------------------------------------------
def _response_items(items: list[Any], out: list[dict[str, Any]]) -> None:
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            call = _tool_call(item.get("call_id"), item.get("name"), item.get("arguments"))
            if out and out[-1]["role"] == "assistant" and not out[-1].get("content"):
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(item.get("output"))})
        elif kind in (None, "message") and "role" in item:
            out.append({"role": str(item["role"]), "content": _text(item.get("content"))})


def _responses(request: dict[str, Any], response: dict[str, Any]) -> list[dict[str, Any]] | None:
    out: list[dict[str, Any]] = []
    if request.get("instructions"):
        out.append({"role": "system", "content": _text(request["instructions"])})
    given = request.get("input")
    if isinstance(given, str):
        out.append({"role": "user", "content": given})
    elif isinstance(given, list):
        _response_items(given, out)
    body = response.get("response") if isinstance(response.get("response"), dict) else response
    if not isinstance(body.get("output"), list):
        return None
    answer: list[dict[str, Any]] = []
    _response_items(body["output"], answer)
    if not answer:
        return None
    merged: dict[str, Any] = {"role": "assistant", "content": "".join(m.get("content") or "" for m in answer)}
    calls = [c for m in answer for c in m.get("tool_calls") or []]
    if calls:
        merged["tool_calls"] = calls
    return out + [merged]


# --- tools -------------------------------------------------------------------------------
def _tool(tool: Any) -> dict[str, Any] | None:
    if not isinstance(tool, dict):
        return None
    if isinstance(tool.get("function"), dict):
        return {"type": "function", "function": tool["function"]}
    if "input_schema" in tool:
        return {"type": "function", "function": {"name": tool.get("name"), "description": tool.get("description"),
                                                 "parameters": tool.get("input_schema")}}
    if tool.get("type") == "function" and "name" in tool:
        return {"type": "function", "function": {"name": tool.get("name"), "description": tool.get("description"),
                                                 "parameters": tool.get("parameters")}}
    return None


def tools_of(request_body: Any) -> list[dict[str, Any]]:
    """The function tools the request offered, in OpenAI's shape (others, like web search, left out)."""
    tools = request_body.get("tools") if isinstance(request_body, dict) else None
    out = [_tool(t) for t in tools or []]
    for tool in out:
        if tool is not None:
            tool["function"] = {k: v for k, v in tool["function"].items() if v is not None}
    return [t for t in out if t is not None]


def conversation(exchange: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """(messages ending in the answer, tools) of one exchange; None when it holds no answer."""
    request = (exchange.get("request") or {}).get("body")
    response = (exchange.get("response") or {}).get("body")
    if not isinstance(request, dict) or not isinstance(response, dict):
        return None
    call_type = (exchange.get("metadata") or {}).get("call_type")
    path = str((exchange.get("request") or {}).get("path") or "")
    if call_type == "messages" or (call_type is None and path.endswith("/messages")):
        messages = _messages(request, response)
    elif call_type == "responses" or (call_type is None and path.endswith("/responses")):
        messages = _responses(request, response)
    else:
        messages = _chat(request, response)
    return None if messages is None else (messages, tools_of(request))
