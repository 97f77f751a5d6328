"""Token usage of one model call, read from the provider's own response.

Each API counts differently; :class:`CallUsage` holds the one meaning the
result uses: ``input_tokens`` is input *not* served from or written to the
cache, so ``total`` = input + output + cache read + cache creation counts every
token once (the ``agent_result.total_tokens`` rule).

- OpenAI Chat Completions: ``prompt_tokens`` includes cached tokens
  (``prompt_tokens_details.cached_tokens``).
- OpenAI Responses: ``input_tokens`` includes ``input_tokens_details.cached_tokens``.
- Anthropic Messages: ``input_tokens`` excludes ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens``.
- Gemini ``generateContent``: ``promptTokenCount`` includes
  ``cachedContentTokenCount``; thinking tokens are billed as output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CHAT = "chat"
RESPONSES = "responses"
MESSAGES = "messages"
GEMINI = "gemini"
COMPLETIONS = "completions"
COUNT_TOKENS = "count_tokens"
MODELS = "models"
"""Look-ups around model calls (token counting, model lists): recorded, never priced."""


@dataclass
class CallUsage:
    """Tokens of one call (or of a trial, summed)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    reasoning_tokens: int = 0
    """Part of ``output_tokens``, kept for information only."""

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_creation_tokens

    def add(self, other: CallUsage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_creation_tokens += other.cache_creation_tokens
        self.reasoning_tokens += other.reasoning_tokens

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens,
                "cache_creation_tokens": self.cache_creation_tokens,
                "reasoning_tokens": self.reasoning_tokens, "total_tokens": self.total}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def from_openai_usage(usage: Any) -> CallUsage | None:
    """Chat Completions / legacy Completions ``usage`` block."""
    if not isinstance(usage, dict) or "prompt_tokens" not in usage and "completion_tokens" not in usage:
        return None
    prompt = _int(usage.get("prompt_tokens"))
    cached = _int(_get(usage, "prompt_tokens_details", "cached_tokens")) or _int(usage.get("prompt_cache_hit_tokens"))
    written = _int(_get(usage, "prompt_tokens_details", "cache_write_tokens"))
    return CallUsage(input_tokens=max(prompt - cached - written, 0), output_tokens=_int(usage.get("completion_tokens")),
                     cache_read_tokens=cached, cache_creation_tokens=written,
                     reasoning_tokens=_int(_get(usage, "completion_tokens_details", "reasoning_tokens")))


def from_responses_usage(usage: Any) -> CallUsage | None:
    """Responses API ``usage`` block."""
    if not isinstance(usage, dict) or "input_tokens" not in usage and "output_tokens" not in usage:
        return None
    total_in = _int(usage.get("input_tokens"))
    cached = _int(_get(usage, "input_tokens_details", "cached_tokens"))
    return CallUsage(input_tokens=max(total_in - cached, 0), output_tokens=_int(usage.get("output_tokens")),
                     cache_read_tokens=cached,
                     reasoning_tokens=_int(_get(usage, "output_tokens_details", "reasoning_tokens")))


def from_anthropic_usage(usage: Any) -> CallUsage | None:
    """Anthropic Messages ``usage`` block."""
    if not isinstance(usage, dict) or "input_tokens" not in usage and "output_tokens" not in usage:
        return None
    return CallUsage(input_tokens=_int(usage.get("input_tokens")), output_tokens=_int(usage.get("output_tokens")),
                     cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
                     cache_creation_tokens=_int(usage.get("cache_creation_input_tokens")))


def from_gemini_usage(meta: Any) -> CallUsage | None:
    """Gemini ``usageMetadata`` block."""
    if not isinstance(meta, dict) or "promptTokenCount" not in meta and "candidatesTokenCount" not in meta:
        return None
    prompt = _int(meta.get("promptTokenCount"))
    cached = _int(meta.get("cachedContentTokenCount"))
    thoughts = _int(meta.get("thoughtsTokenCount"))
    return CallUsage(input_tokens=max(prompt - cached, 0),
                     output_tokens=_int(meta.get("candidatesTokenCount")) + thoughts,
                     cache_read_tokens=cached, reasoning_tokens=thoughts)


def usage_from_body(kind: str | None, body: Any) -> CallUsage | None:
    """Usage of a complete (non-streamed or reassembled) response body, or None."""
    if not isinstance(body, dict):
        return None
    if kind in (CHAT, COMPLETIONS):
        return from_openai_usage(body.get("usage"))
    if kind == RESPONSES:
        inner = body.get("response") if isinstance(body.get("response"), dict) else body
        return from_responses_usage(inner.get("usage"))
    if kind == MESSAGES:
        return from_anthropic_usage(body.get("usage"))
    if kind == GEMINI:
        return from_gemini_usage(body.get("usageMetadata"))
    return None


def model_from_body(body: Any) -> str | None:
    """The model id a response names (``model``, or Gemini's ``modelVersion``)."""
    if not isinstance(body, dict):
        return None
    for key in ("model", "modelVersion"):
        if isinstance(body.get(key), str):
            return body[key]
    inner = body.get("response")
    if isinstance(inner, dict) and isinstance(inner.get("model"), str):
        return inner["model"]
    return None
