"""Agent error words and their categories (contracts §3.11, ``classify_error``).

The runtime writes an outcome's ``error`` in words this classifier understands,
so a category can always be recomputed from the stored string. First match
wins; matching is case-insensitive.
"""

from __future__ import annotations

_AUTH = ("permission_denied", "leaked", "failed to authenticate", "invalid bearer token", "invalid api key",
         "was rejected as invalid", "unauthorized", "provider auth failed", "http 401", "http 403")
_RATE = ("provider rate limited", "rate limit", "too many requests", "http 429")
_OUTAGE = ("provider unavailable", "http 503")
_REJECTED = ("provider rejected request", "http 400")
_INFRA = ("connection lost", "connection reset", "connection refused", "broken pipe",
          "transient sandbox transport", "failed to get session command", "sandbox not found",
          "workspace not found", "api connection", "api timeout", "temporarily unavailable")

RETRYABLE = frozenset({"install_failure", "pipe_closed", "idle_timeout", "infra_failure", "sandbox_setup", "acp_error"})
"""Agent categories a retry may help (§3.8); ``api_error`` only when marked ``/transient]``."""


def _any(text: str, markers: tuple[str, ...]) -> bool:
    return any(marker in text for marker in markers)


def classify_error(message: str | None) -> str | None:
    """The category of an agent error message; None for no error."""
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
    if "acp error" in text or "agent cli error" in text or "was rejected as invalid" in text:  # cli: --harness native
        if _any(text, _AUTH):
            return "provider_auth"
        if _any(text, _RATE):
            return "provider_rate_limit"
        if _any(text, _OUTAGE):
            return "infra_failure"
        if _any(text, _REJECTED):
            return "provider_rejected"
        return "acp_error"
    if "sandbox startup" in text or "sandbox creation" in text:
        return "sandbox_setup"
    if "prompt exceeded wall-clock budget" in text:
        return "timeout"
    if _any(text, _INFRA):
        return "infra_failure"
    if "timed out" in text:
        return "timeout"
    return "other"


def is_retryable(category: str | None, message: str | None = None) -> bool:
    """Whether a retry of a trial that failed with ``category`` may succeed (§3.8)."""
    if category == "api_error":
        return "/transient]" in (message or "")
    return category in RETRYABLE
