"""Streamed (SSE) responses: split into events and reassemble into one body.

The gateway forwards every byte to the agent as it arrives and feeds a copy
to a :class:`StreamAssembler`, which rebuilds the response the call would
have returned without streaming. That body is what ``llm_trajectory.jsonl``
records, and its ``usage`` is what the call cost.
"""

from __future__ import annotations

import json
from typing import Any

from benchflow.gateway.usage import CHAT, COMPLETIONS, GEMINI, MESSAGES, RESPONSES


class SSEParser:
    """Incremental server-sent-events parser: bytes in, (event, data) pairs out."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n")
        events: list[tuple[str, str]] = []
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            event, data = "message", []
            for line in block.decode("utf-8", "replace").split("\n"):
                if line.startswith("data:"):
                    data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
                elif line.startswith("event:"):
                    event = line[6:].strip()
            if data:
                events.append((event, "\n".join(data)))
        return events


class StreamAssembler:
    """Rebuilds the final response body of one streamed call of API ``kind``."""

    def __init__(self, kind: str | None) -> None:
        self.kind = kind
        self.n_events = 0
        self._parser = SSEParser()
        self._body: dict[str, Any] = {}
        self._choices: dict[int, dict[str, Any]] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json_parts: dict[int, list[str]] = {}
        self._output_items: list[Any] = []
        self._texts: list[str] = []

    def feed(self, chunk: bytes) -> None:
        for _event, data in self._parser.feed(chunk):
            if data.strip() == "[DONE]":
                continue
            try:
                payload = json.loads(data)
            except ValueError:
                continue
            if isinstance(payload, dict):
                self.feed_payload(payload)

    def feed_payload(self, payload: dict[str, Any]) -> None:
        """One parsed event; also how Gemini's non-SSE stream (a JSON array of chunks) is merged."""
        self.n_events += 1
        self._apply(payload)

    def _apply(self, payload: dict[str, Any]) -> None:
        if self.kind in (CHAT, COMPLETIONS):
            self._chat(payload)
        elif self.kind == MESSAGES:
            self._messages(payload)
        elif self.kind == RESPONSES:
            self._responses(payload)
        elif self.kind == GEMINI:
            self._gemini(payload)

    # --- OpenAI Chat Completions -------------------------------------------------
    def _chat(self, chunk: dict[str, Any]) -> None:
        for key in ("id", "model", "created", "system_fingerprint", "service_tier", "prompt_token_ids"):
            if chunk.get(key) is not None:
                self._body[key] = chunk[key]
        if chunk.get("usage"):
            self._body["usage"] = chunk["usage"]
        for choice in chunk.get("choices") or []:
            index = choice.get("index", 0)
            merged = self._choices.setdefault(index, {"index": index, "message": {"role": "assistant"},
                                                      "finish_reason": None})
            if choice.get("finish_reason"):
                merged["finish_reason"] = choice["finish_reason"]
            if "text" in choice:  # legacy completions
                merged["text"] = merged.get("text", "") + (choice.get("text") or "")
            self._tokens(merged, choice)
            delta = choice.get("delta") or {}
            message = merged["message"]
            for key in ("content", "reasoning_content", "reasoning", "refusal"):
                if isinstance(delta.get(key), str):
                    message[key] = (message.get(key) or "") + delta[key]
            if delta.get("role"):
                message["role"] = delta["role"]
            for call in delta.get("tool_calls") or []:
                calls = message.setdefault("tool_calls", [])
                position = call.get("index", len(calls))
                while len(calls) <= position:
                    calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                target = calls[position]
                if call.get("id"):
                    target["id"] = call["id"]
                function = call.get("function") or {}
                target["function"]["name"] += function.get("name") or ""
                target["function"]["arguments"] += function.get("arguments") or ""

    @staticmethod
    def _tokens(merged: dict[str, Any], choice: dict[str, Any]) -> None:
        """Token ids and logprobs (vLLM/SGLang, asked for by token capture) arrive per chunk: append them."""
        if isinstance(choice.get("token_ids"), list):
            merged.setdefault("token_ids", []).extend(choice["token_ids"])
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and isinstance(logprobs.get("content"), list):
            merged.setdefault("logprobs", {"content": []})["content"].extend(logprobs["content"])

    # --- Anthropic Messages --------------------------------------------------------
    def _messages(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            self._body = dict(event.get("message") or {})
            self._body["content"] = []
        elif kind == "content_block_start":
            self._blocks[event.get("index", 0)] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            index = event.get("index", 0)
            block = self._blocks.setdefault(index, {})
            delta = event.get("delta") or {}
            for field in ("text", "thinking", "signature"):
                if field in delta:
                    block[field] = block.get(field, "") + (delta.get(field) or "")
            if "partial_json" in delta:
                self._json_parts.setdefault(index, []).append(delta.get("partial_json") or "")
        elif kind == "message_delta":
            self._body.update({k: v for k, v in (event.get("delta") or {}).items()})
            usage = dict(self._body.get("usage") or {})
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            self._body["usage"] = usage
        elif kind == "error":
            self._body["error"] = event.get("error")

    # --- OpenAI Responses ----------------------------------------------------------
    def _responses(self, event: dict[str, Any]) -> None:
        kind = event.get("type", "")
        response = event.get("response")
        if isinstance(response, dict) and kind in ("response.created", "response.in_progress", "response.completed",
                                                   "response.incomplete", "response.failed"):
            self._body = dict(response)
        elif kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            self._output_items.append(event["item"])
        elif kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
            self._texts.append(event["delta"])
        elif kind == "error":
            self._body["error"] = {k: v for k, v in event.items() if k != "type"}

    # --- Gemini --------------------------------------------------------------------
    def _gemini(self, chunk: dict[str, Any]) -> None:
        for key in ("usageMetadata", "modelVersion", "responseId"):
            if chunk.get(key) is not None:
                self._body[key] = chunk[key]
        for candidate in chunk.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                if isinstance(part.get("text"), str):
                    self._texts.append(part["text"])
                else:
                    self._output_items.append(part)
            if candidate.get("finishReason"):
                self._body["finishReason"] = candidate["finishReason"]

    def body(self) -> dict[str, Any]:
        """The reassembled response body (what a non-streamed call would return)."""
        body = dict(self._body)
        if self.kind in (CHAT, COMPLETIONS):
            body["object"] = "chat.completion" if self.kind == CHAT else "text_completion"
            body["choices"] = [self._choices[i] for i in sorted(self._choices)]
        elif self.kind == MESSAGES:
            blocks = []
            for index in sorted(self._blocks):
                block = dict(self._blocks[index])
                if index in self._json_parts:
                    text = "".join(self._json_parts[index])
                    try:
                        block["input"] = json.loads(text) if text else {}
                    except ValueError:
                        block["input"] = text
                blocks.append(block)
            body["content"] = blocks
        elif self.kind == RESPONSES:
            if not body.get("output") and (self._output_items or self._texts):
                body["output"] = self._output_items or [
                    {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": "".join(self._texts)}]}]
        elif self.kind == GEMINI:
            parts = ([{"text": "".join(self._texts)}] if self._texts else []) + self._output_items
            body["candidates"] = [{"content": {"role": "model", "parts": parts},
                                   "finishReason": body.pop("finishReason", None)}]
        return body
