"""Tokenizer-aware message windows (``--context-policy message-window``) and rendered lengths.

The tokenizer is loaded with the ``tokenizers`` library: a local
``tokenizer.json`` (or a folder holding one), else a hub id at
``--tokenizer-revision``. A conversation is rendered in ChatML form
(``<|im_start|>role\\ncontent<|im_end|>\\n``, tool calls as their JSON, tools
as a system preamble) and counted in that tokenizer's tokens. Chat templates
(Jinja) are not rendered, so a length is that of the ChatML rendering, which
tracks the real one closely for ChatML-family models.

A window keeps the leading system messages and the longest suffix that starts
at a user message and fits in ``--max-length`` tokens; a conversation whose
last user turn alone does not fit gets no row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import UserError


def render_message(message: dict[str, Any]) -> str:
    body = message.get("content") or ""
    for call in message.get("tool_calls") or []:
        body += "\n<tool_call>" + json.dumps(call.get("function") or {}, ensure_ascii=False) + "</tool_call>"
    return f"<|im_start|>{message.get('role')}\n{body}<|im_end|>\n"


def render(messages: list[dict[str, Any]], tools: list[Any]) -> str:
    head = (f"<|im_start|>system\n<tools>{json.dumps(tools, ensure_ascii=False)}</tools><|im_end|>\n"
            if tools else "")
    return head + "".join(render_message(m) for m in messages)


@dataclass
class Windower:
    tokenizer: Any
    max_length: int

    @classmethod
    def load(cls, name: str | None, revision: str | None, max_length: int | None) -> Windower:
        if not name or not max_length or max_length < 1:
            raise UserError("--tokenizer and a --max-length of 1 or more are needed for tokenizer-aware lengths")
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise UserError("--tokenizer needs the tokenizers package: pip install 'benchflow[train]'") from None
        local = Path(name)
        try:
            if local.exists():
                path = local / "tokenizer.json" if local.is_dir() else local
                tokenizer = Tokenizer.from_file(str(path))
            else:
                tokenizer = Tokenizer.from_pretrained(name, revision=revision or "main")
        except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception for a bad file or id
            raise UserError(f"--tokenizer {name}: cannot be loaded ({str(exc).splitlines()[0][:200]})") from None
        return cls(tokenizer, max_length)

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def length(self, messages: list[dict[str, Any]], tools: list[Any]) -> int:
        return self.count(render(messages, tools))

    def fit(self, messages: list[dict[str, Any]], tools: list[Any]) -> list[dict[str, Any]] | None:
        """The window of ``messages`` that fits ``max_length``, or None when none does."""
        lead = 0
        while lead < len(messages) and messages[lead]["role"] == "system":
            lead += 1
        budget = self.max_length - self.count(render(messages[:lead], tools))
        sizes = [self.count(render_message(m)) for m in messages[lead:]]
        total = sum(sizes)
        for start, message in enumerate(messages[lead:]):
            if message["role"] == "user" and total <= budget:
                return messages[:lead] + messages[lead + start:]
            total -= sizes[start]
        return None
