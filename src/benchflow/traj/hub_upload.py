"""Sending a capture to a hub, waiting until the hub verified it, and asking for its status."""

from __future__ import annotations

import os
import time
from typing import Any

from benchflow.errors import UserError
from benchflow.hub.client import HubClient

WAIT_ENV = "BENCHFLOW_TRAJ_WAIT_SECONDS"
DEFAULT_WAIT = 120.0
FINAL = ("verified", "rejected")


def wait_budget() -> float:
    raw = os.environ.get(WAIT_ENV)
    if raw is None:
        return DEFAULT_WAIT
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{WAIT_ENV}={raw!r}: give a number of seconds") from None
    if value < 0:
        raise UserError(f"{WAIT_ENV}={raw!r}: give a number of seconds, 0 or more")
    return value


def send(client: HubClient, capture_path) -> dict[str, Any]:
    return client.upload("POST", "/api/trajectories", capture_path).json()


def status(client: HubClient, digest: str) -> dict[str, Any]:
    return client.get_json(f"/api/trajectories/{digest}")


def wait(client: HubClient, digest: str, budget: float) -> dict[str, Any]:
    """The capture's status once final (verified/rejected), or the last one seen when ``budget`` ran out."""
    deadline = time.monotonic() + budget
    delay = 0.1
    while True:
        current = status(client, digest)
        if current["status"] in FINAL or time.monotonic() >= deadline:
            return current
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 2.0)
