"""Token capture: the exact token ids and logprobs a model sampled, for RL trainers.

OpenAI-compatible inference servers (vLLM, SGLang) return them when asked:
``logprobs: true`` gives ``choices[].logprobs.content[].logprob``;
``return_tokens_as_token_ids: true`` makes each ``token`` read ``token_id:<id>``;
``return_token_ids: true`` (vLLM ≥ 0.10.2) adds ``prompt_token_ids`` to the
response and ``token_ids`` to each choice. With capture on
(``GatewayConfig.capture_tokens``, or ``BENCHFLOW_CAPTURE_TOKENS=1`` in the
environment of ``bench run``) the gateway asks for all three on every Chat
Completions / Completions call, without the agent knowing, and records what
came back as the exchange's ``token_capture`` block::

    {"prompt_token_ids": [...], "sampled_token_ids": [...], "logprobs": [...], "source": "response"}

A field the server did not return is null. Providers that reject these
request fields (OpenAI's own API does) should not be run with capture on.
"""

from __future__ import annotations

import os
from typing import Any

from benchflow.gateway.usage import CHAT, COMPLETIONS

CAPTURE_ENV = "BENCHFLOW_CAPTURE_TOKENS"
KINDS = (CHAT, COMPLETIONS)


def capture_from_env(env: dict[str, str] | None = None) -> bool:
    """True when ``BENCHFLOW_CAPTURE_TOKENS`` is 1/true/yes."""
    value = (env if env is not None else os.environ).get(CAPTURE_ENV, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def ask(kind: str | None, body: Any) -> dict[str, Any] | None:
    """The request body asking for token ids and logprobs, or None when nothing changes."""
    if kind not in KINDS or not isinstance(body, dict):
        return None
    wanted: dict[str, Any] = {"return_token_ids": True, "return_tokens_as_token_ids": True,
                              "logprobs": True if kind == CHAT else 1}
    added = {k: v for k, v in wanted.items() if k not in body}
    return {**body, **added} if added else None


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    return None


def _token_id(token: Any) -> int | None:
    if isinstance(token, str) and token.startswith("token_id:"):
        try:
            return int(token[9:])
        except ValueError:
            return None
    return None


def capture(kind: str | None, body: Any) -> dict[str, Any] | None:
    """The ``token_capture`` block of a response body, or None when it carries no token data."""
    if kind not in KINDS or not isinstance(body, dict):
        return None
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    prompt = _ints(body.get("prompt_token_ids")) or _ints(choice.get("prompt_token_ids"))
    sampled = _ints(choice.get("token_ids"))
    logprobs: list[float] | None = None
    block = choice.get("logprobs") if isinstance(choice.get("logprobs"), dict) else {}
    content = block.get("content")
    if isinstance(content, list):  # Chat Completions
        logprobs = [c.get("logprob") for c in content if isinstance(c, dict)]
        if sampled is None:
            ids = [_token_id(c.get("token")) for c in content if isinstance(c, dict)]
            sampled = ids if ids and all(i is not None for i in ids) else None  # type: ignore[assignment]
    elif isinstance(block.get("token_logprobs"), list):  # legacy Completions
        logprobs = block["token_logprobs"]
        if sampled is None:
            ids = [_token_id(t) for t in block.get("tokens") or []]
            sampled = ids if ids and all(i is not None for i in ids) else None  # type: ignore[assignment]
    if prompt is None and sampled is None and logprobs is None:
        return None
    return {"prompt_token_ids": prompt, "sampled_token_ids": sampled, "logprobs": logprobs, "source": "response"}
