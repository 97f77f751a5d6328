"""Observe that runtimes are gone: a ``benchflow.assessment-release-proof.v1`` document.

``bench assess release`` binds such a document before any human sees the
attempts (a runtime still alive could change what they see). Each runtime is
asked of its own backend (``Backend.exists``); a backend that is unknown here
or cannot be reached gives ``unknown``, never ``absent``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

SCHEMA = "benchflow.assessment-release-proof.v1"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _observe(provider: str, runtime_id: str) -> tuple[str, str]:
    from benchflow.errors import BenchError
    from benchflow.sandbox import get_backend

    try:
        backend = get_backend(provider)
    except BenchError as exc:
        return "unknown", str(exc)
    works, why = backend.available()
    if not works:
        return "unknown", f"{provider} cannot be asked here: {why}"
    try:
        present = backend.exists(runtime_id)
    except Exception as exc:  # noqa: BLE001 - any failure to ask is "unknown", never "absent"
        return "unknown", f"{provider} did not answer ({type(exc).__name__}: {exc})"
    return ("present", "still exists") if present else ("absent", "the backend has no such runtime")


def observe_release(runtimes: list[dict[str, str]]) -> dict[str, Any]:
    """The proof for ``runtimes`` (``{provider, runtime_id, role}`` each), observed now."""
    observations = []
    for runtime in runtimes:
        state, detail = _observe(runtime["provider"], runtime["runtime_id"])
        observations.append({"provider": runtime["provider"], "runtime_id": runtime["runtime_id"],
                             "role": runtime.get("role", "solver"), "state": state, "observed_at": _now(),
                             "method": "Backend.exists", "detail": detail})
    return {"schema": SCHEMA, "observer": "bench sandbox list --release-proof", "observed_at": _now(),
            "observations": observations}


def all_absent(proof: dict[str, Any]) -> bool:
    return all(o["state"] == "absent" for o in proof["observations"])
