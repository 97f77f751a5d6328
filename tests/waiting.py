"""Waiting for a condition in tests: poll with a deadline, never a fixed sleep before an assertion."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 60.0, interval: float = 0.1,
               what: str = "the condition") -> T:
    """``predicate()``'s first truthy value, polled every ``interval`` s. A predicate that walks a
    live job folder can meet a temporary entry as it vanishes (FileNotFoundError): not yet.

    Raises:
        AssertionError: it stayed falsy for ``timeout`` seconds (the message names ``what``).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except FileNotFoundError:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


def runs_in_container(container_ids: list[str], needle: str) -> bool:
    """Whether a process whose command line contains ``needle`` runs in one of these containers."""
    import docker

    client = docker.from_env()
    for cid in container_ids:
        try:
            top = client.containers.get(cid).top(ps_args="-eo pid,args")
        except docker.errors.APIError:
            continue
        if any(needle in " ".join(row) for row in top.get("Processes") or []):
            return True
    return False
