"""Provider-failure detection from what the gateway counted (pure functions).

- Every model call failed → ``api_error`` with ``api_error_info``: the agent
  never got a model response, so its reward measures nothing.
- No tokens and no tool calls, without an error → ``suspected_api_error``: the
  signature of a provider failure swallowed inside the agent (for instance a
  model id the agent rejected before sending anything).

Only status codes are used, never bodies, so the verdict is the same whatever
a provider writes in its error messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SUBCATEGORIES: dict[int, str] = {
    400: "bad_request", 401: "auth", 402: "quota", 403: "auth", 404: "model_not_found",
    408: "timeout", 413: "bad_request", 422: "bad_request", 429: "rate_limit",
    500: "server_error", 502: "unavailable", 503: "unavailable", 504: "timeout", 529: "overloaded",
}


def subcategory(status: int) -> str:
    """What kind of provider failure an HTTP status is."""
    if status in _SUBCATEGORIES:
        return _SUBCATEGORIES[status]
    return "server_error" if status >= 500 else "provider_error"


def is_transient(status: int) -> bool:
    """Worth retrying later: timeouts, rate limits and server-side failures."""
    return status in (408, 429) or status >= 500


def api_error_info(status_counts: Mapping[str | int, int], total_requests: int,
                   failed_requests: int) -> dict[str, Any] | None:
    """The ``api_error_info`` block when every model call failed, else None.

    Args:
        status_counts: HTTP status → number of calls (keys as int or str).
        total_requests: model calls made.
        failed_requests: those that did not succeed (status ≥ 400).
    """
    if total_requests <= 0 or failed_requests < total_requests:
        return None
    failed = {int(s): n for s, n in status_counts.items() if int(s) >= 400 and n > 0}
    if not failed:
        return None
    dominant = max(sorted(failed), key=lambda s: failed[s])
    sub = subcategory(dominant)
    return {
        "subcategory": sub,
        "transient": is_transient(dominant),
        "dominant_status": dominant,
        "status_counts": {str(s): n for s, n in sorted(failed.items())},
        "total_requests": total_requests,
        "failed_requests": failed_requests,
        "fingerprint": f"{sub}:{dominant}",
    }


def api_error_message(info: Mapping[str, Any]) -> str:
    """The trial error string for an ``api_error_info`` block (matched by error classification)."""
    kind = "transient" if info["transient"] else "permanent"
    return (f"Provider API error [{info['subcategory']}/{kind}] HTTP {info['dominant_status']} "
            f"on {info['failed_requests']}/{info['total_requests']} requests")


def suspected_api_error_info(total_tokens: int, n_tool_calls: int, total_requests: int,
                             failed_requests: int) -> dict[str, Any] | None:
    """The ``suspected_api_error_info`` block for a zero-signal trial, else None.

    Not raised when every call failed: that is a proven ``api_error`` instead.
    """
    if total_tokens > 0 or n_tool_calls > 0:
        return None
    if total_requests > 0 and failed_requests >= total_requests:
        return None
    return {"total_tokens": total_tokens, "n_tool_calls": n_tool_calls,
            "total_requests": total_requests, "failed_requests": failed_requests}


def suspected_api_error_message(info: Mapping[str, Any]) -> str:
    """The trial error string for a ``suspected_api_error_info`` block."""
    return (f"Suspected provider API error: the agent ended with {info['total_tokens']} tokens and "
            f"{info['n_tool_calls']} tool calls ({info['failed_requests']}/{info['total_requests']} "
            "model calls failed)")
