"""What the gateway forwards: the providers' model APIs, and nothing else.

The gateway holds the host's real provider keys, so anything it forwards is
done in the host owner's name. An agent may run models; it may not use the
rest of the provider account (batches, files, fine-tuning, embeddings,
vector stores, assistants, admin APIs …), which would be unmetered, outlive
the trial, or touch data that is not the agent's. So the rule is an allow
list of (method, path) per API, matched on the whole path after the provider
mount (query removed, one trailing slash tolerated):

=====================  ======  =====================================================
kind                   method  path after the mount
=====================  ======  =====================================================
``chat``               POST    ``[/v1 | /v1beta/openai]/chat/completions``
``completions``        POST    ``[/v1]/completions`` (legacy text completions; vLLM)
``responses``          POST    ``[/v1]/responses``, ``[/v1]/responses/compact`` (Codex)
``messages``           POST    ``[/v1]/messages``
``gemini``             POST    ``/v1beta/models/<m>:generateContent`` /
                               ``:streamGenerateContent`` (also ``/v1``, ``/v1alpha``)
``count_tokens``       POST    ``[/v1]/messages/count_tokens``, ``[/v1]/responses/input_tokens``,
                               ``/v1beta/models/<m>:countTokens``
``models``             GET     ``[version]/models`` and ``[version]/models/<m>``
=====================  ======  =====================================================

The first five are model calls (budgeted, counted, priced, recorded); the
last two are free look-ups a client makes around them (recorded, refused once
the budget is spent, never a turn). A model id segment is ``[A-Za-z0-9._-]``
starting with a letter or digit, so no dot-segment or encoded slash can steer
an allowed path elsewhere on the provider. Everything else is refused with
403 and recorded as refused.

Headers: the real key replaces whatever credential the agent sent, and
headers that choose *whose* account is billed or *which* identity acts are
dropped (:data:`DROPPED_HEADERS`). ``anthropic-version`` is kept (required by
the API, changes only the wire format). ``anthropic-beta`` is kept because
agents need it for ordinary model features (Claude Code sends several betas:
interleaved thinking, fine-grained tool streaming, context management, and
the API rejects their body fields without the header), but its values are
filtered: betas whose feature reaches beyond one model call are removed
(:data:`UNSAFE_BETA_PREFIXES`: the Files API, message batches, the MCP
connector and web fetch, which make Anthropic's servers contact other hosts
for the agent, code execution and skills, which run containers billed by the
hour, and OAuth). Every other ``anthropic-*`` header is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from benchflow.gateway.usage import CHAT, COMPLETIONS, COUNT_TOKENS, GEMINI, MESSAGES, MODELS, RESPONSES

MODEL_CALLS = frozenset({CHAT, COMPLETIONS, RESPONSES, MESSAGES, GEMINI})
"""Kinds that are model calls: a turn of the budget, tokens, a price."""

_MODEL = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_VERSION = r"/v1(?:beta|alpha)?"
_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (method, kind, re.compile(pattern)) for method, kind, pattern in (
        ("POST", CHAT, r"(?:/v1|/v1beta/openai)?/chat/completions"),
        ("POST", COMPLETIONS, r"(?:/v1)?/completions"),
        ("POST", RESPONSES, r"(?:/v1)?/responses(?:/compact)?"),
        ("POST", MESSAGES, r"(?:/v1)?/messages"),
        ("POST", GEMINI, rf"{_VERSION}/models/{_MODEL}:(?:generateContent|streamGenerateContent)"),
        ("POST", COUNT_TOKENS, r"(?:/v1)?/messages/count_tokens|(?:/v1)?/responses/input_tokens"),
        ("POST", COUNT_TOKENS, rf"{_VERSION}/models/{_MODEL}:countTokens"),
        ("GET", MODELS, rf"(?:{_VERSION}|/v1beta/openai)?/models(?:/{_MODEL})?"),
    ))

NOT_A_MODEL_API = "not_a_model_api"
"""``metadata.refused`` of a request the policy refused."""

DROPPED_HEADERS = frozenset({
    # hop-by-hop and framing: the gateway's own connection sets them
    "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
    "proxy-authorization", "proxy-connection", "accept-encoding",
    # credentials: replaced by the real key
    "authorization", "x-api-key", "x-goog-api-key", "cookie",
    # whose account is billed / which identity acts
    "openai-organization", "openai-project", "chatgpt-account-id", "x-goog-user-project",
})
"""Agent headers never forwarded (lower case)."""

UNSAFE_BETA_PREFIXES = ("files-api", "message-batches", "mcp-client", "web-fetch", "code-execution", "skills",
                        "oauth")
"""``anthropic-beta`` values (by prefix) removed before forwarding: features beyond one model call."""

KEPT_ANTHROPIC_HEADERS = frozenset({"anthropic-version", "anthropic-beta"})


def classify(method: str, rest: str) -> str | None:
    """The API kind of ``method rest`` (the path after the provider mount), or None when refused."""
    path = rest.split("?", 1)[0]
    if path.endswith("/") and len(path) > 1:
        path = path[:-1]
    for rule_method, kind, pattern in _RULES:
        if method == rule_method and pattern.fullmatch(path):
            return kind
    return None


def _safe_betas(value: str) -> str:
    kept = [b.strip() for b in value.split(",")
            if b.strip() and not b.strip().lower().startswith(UNSAFE_BETA_PREFIXES)]
    return ",".join(kept)


def upstream_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The agent's headers as they may go to the provider (no credential, billing or identity header).

    ``headers`` are (name, value) pairs with lower-case names, as Starlette gives them.
    """
    out: dict[str, str] = {}
    for name, value in headers:
        if name in DROPPED_HEADERS:
            continue
        if name.startswith("anthropic-"):
            if name not in KEPT_ANTHROPIC_HEADERS:
                continue
            if name == "anthropic-beta":
                value = _safe_betas(value)
                if not value:
                    continue
        out[name] = f"{out[name]},{value}" if name in out else value
    return out


def refusal_message(method: str, path: str) -> str:
    """The one-line reason a refused agent sees."""
    return (f"BenchFlow gateway: {method} {path} is not a model API call, so it is not forwarded; "
            "allowed: chat/completions, completions, responses, messages, count_tokens, "
            "generateContent/streamGenerateContent/countTokens, GET models")
