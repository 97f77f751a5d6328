"""Which failed trials are run again, and how long to wait first (contracts §3.8).

Only the agent phase is retried, and only for infrastructure reasons. A trial
whose agent finished (or timed out) is never rerun because of its verifier, and
a failure that repeats the same way on this machine (a refusal, a missing tool,
a build step or an install script that fails) is attempted once.
"""

from __future__ import annotations

from typing import Any

from benchflow.categories import is_retryable as category_is_retryable

PERMANENT = frozenset({"timeout", "provider_auth", "provider_rate_limit", "provider_rejected", "usage_limit"})
"""Never retried, whatever the policy: another attempt would fail the same way or spend quota."""

_STARTUP_REASONS = {"build_failed": "the same Dockerfile fails the same way",
                    "refused": "the sandbox refuses it the same way on every attempt"}


def deterministic_reason(result: dict[str, Any]) -> str | None:
    """Why another attempt of this failed trial would fail the same way; None when it might not."""
    if result.get("rewards") is not None or result.get("verifier_error"):
        return None
    reason = _STARTUP_REASONS.get((result.get("sandbox_startup_info") or {}).get("reason"))
    if reason is not None:
        return reason
    if result.get("error_category") == "install_failure":
        from benchflow.agents.install_errors import is_deterministic  # only for a failed install

        if is_deterministic(str(result.get("error") or "")):
            return "the install script exited non-zero"
    return None


def is_retryable(result: dict[str, Any], policy: str = "default") -> bool:
    if result.get("rewards") is not None or result.get("verifier_error"):
        return False
    category = result.get("error_category")
    if category in PERMANENT or deterministic_reason(result) is not None:
        return False
    if policy == "unscored-only":
        return True  # every unscored trial gets another attempt
    return category_is_retryable(category, str(result.get("error") or ""))


def backoff_sec(attempt: int, base: float = 1.0) -> float:
    """Seconds to wait before attempt ``attempt`` (2, 3, …): ``min(base · 2^(attempt-1), 30)``."""
    return min(base * 2 ** (attempt - 1), 30.0)
