"""Error categories: what the words of a trial's error mean (contracts §3.8, §3.11).

The engine, the agent runtimes and every reader classify the same way, here:
an error string always maps to the same category, so a category can be
recomputed from what ``result.json`` stores. First match wins; matching is
case-insensitive.
"""

from __future__ import annotations

from collections.abc import Iterable

_AUTH = ("permission_denied", "leaked", "failed to authenticate", "invalid bearer token", "invalid api key",
         "was rejected as invalid", "unauthorized", "provider auth failed", "http 401", "http 403")
_RATE = ("provider rate limited", "rate limit", "too many requests", "http 429")
_UNAVAILABLE = ("provider unavailable", "http 503")
_REJECTED = ("provider rejected request", "http 400")
_SANDBOX = ("sandbox startup", "sandbox creation", "error response from daemon", "manifest unknown",
            "pull access denied", "failed to resolve reference")
_INFRA = ("connection lost", "connection reset", "connection refused", "broken pipe", "transient sandbox",
          "failed to get session command", "sandbox not found", "workspace not found", "api connection",
          "api timeout", "temporarily unavailable")
_DEP_INSTALL = ("dependency install failed", "failed to download `", "failed to fetch:",
                "error sending request for url", "failed to lookup address information", "no solution found",
                "could not find a version", "resolution impossible")
_VERIFIER_INFRA = _INFRA + ("failed to add tests directory", "failed to download verifier directory",
                            "failed to download llm-judge input", "verifier setup failed")

AGENT_CATEGORIES = (
    "idle_timeout", "install_failure", "pipe_closed", "suspected_api_error", "api_error", "provider_auth",
    "provider_rate_limit", "provider_rejected", "acp_error", "sandbox_setup", "timeout", "infra_failure",
    "usage_limit", "usage_unavailable", "agent_integration", "replay_divergence", "other",
)
"""Every agent-side category ``classify_error`` (or the 0.10 engine) can store."""

VERIFIER_CATEGORIES = ("verifier_dep_install", "verifier_infra", "verifier_failure", "verifier_timeout",
                       "verifier_other", "verifier_plugin_trust")
"""Every verifier-side category ``classify_verifier_error`` (or the 0.10 engine) can store."""


def _has(text: str, markers: Iterable[str]) -> bool:
    return any(marker in text for marker in markers)


def classify_error(message: str | None) -> str | None:
    """The agent-side category of an error message (§3.11, first match wins)."""
    if not message:
        return None
    text = message.lower()
    if "agent idle for" in text:
        return "idle_timeout"
    if "install failed" in text:
        return "install_failure"
    if "closed stdout" in text:
        return "pipe_closed"
    if "suspected provider api error" in text:
        return "suspected_api_error"
    if "provider api error" in text:
        return "api_error"
    if "acp error" in text or "agent cli error" in text or "was rejected as invalid" in text:
        if _has(text, _AUTH):
            return "provider_auth"
        if _has(text, _RATE):
            return "provider_rate_limit"
        if _has(text, _UNAVAILABLE):
            return "infra_failure"
        if _has(text, _REJECTED):
            return "provider_rejected"
        return "acp_error"
    if "replay diverged" in text:  # bench eval continue --strict-divergence
        return "replay_divergence"
    if _has(text, _SANDBOX):
        return "sandbox_setup"
    if "prompt exceeded wall-clock budget" in text:
        return "timeout"
    if _has(text, _INFRA):
        return "infra_failure"
    if "timed out" in text:
        return "timeout"
    return "other"


def classify_verifier_error(message: str | None) -> str | None:
    """The verifier-side category of a verifier error message (§3.11)."""
    if not message:
        return None
    text = message.lower()
    if "pluginguardloaderror" in text:
        return "verifier_plugin_trust"
    if "verifier crashed" in text:
        if _has(text, _DEP_INSTALL):
            return "verifier_dep_install"
        if _has(text, _VERIFIER_INFRA):
            return "verifier_infra"
        return "verifier_failure"
    if "verifier timed out" in text:
        return "verifier_timeout"
    return "verifier_other"


RETRYABLE = frozenset({"install_failure", "pipe_closed", "idle_timeout", "infra_failure", "sandbox_setup", "acp_error"})
"""Agent categories a retry may help (§3.8); ``api_error`` only when marked ``/transient]``."""


def is_retryable(category: str | None, message: str | None = None) -> bool:
    """Whether a retry of a trial that failed with ``category`` may succeed (§3.8)."""
    if category == "api_error":
        return "/transient]" in (message or "")
    return category in RETRYABLE
