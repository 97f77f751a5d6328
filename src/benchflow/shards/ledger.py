"""One job budget for every worker shard: a folder where each worker keeps what it has spent.

Each worker's :class:`benchflow.jobs.budget.BudgetKeeper` publishes its own spend
(rollouts started, trial seconds finished and the start of each running trial,
its gateway's tokens and USD, and what it stopped or cancelled) to
``worker-<pid>.json`` at every check, and counts the other workers' files
against the same caps, so the job stops at ``--max-cost-usd``, ``--max-tokens``,
``--max-sandbox-seconds`` or ``--max-rollouts`` as one process would. A start
is decided under the folder's ``flock``, so two workers never both take the
last rollout. Running trials' starts are ``time.monotonic()`` values, the same
clock in every process of the machine. A worker that died leaves its spend
counted, not its running trials (their sandboxes are gone). The parent merges
the files into the job's one budget document for summary.json.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchflow.util import atomic

MONEY = ("tokens", "cost_usd")


class Ledger:
    """This worker's view of the shared folder (``me``: its own file's name)."""

    def __init__(self, folder: Path, me: str | None = None) -> None:
        self.folder = Path(folder)
        self.me = me or f"worker-{os.getpid()}.json"

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the folder's lock: no other worker decides a start meanwhile (held for a few file reads)."""
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the file releases the lock

    def publish(self, own: dict[str, Any]) -> dict[str, float]:
        """Write this worker's spend; the other workers' totals (rollouts, seconds, tokens, cost_usd)."""
        atomic.write_json(self.folder / self.me, {**own, "pid": os.getpid()})
        return _totals(doc for name, doc in _entries(self.folder) if name != self.me)


def document(folder: Path, base: dict[str, Any]) -> dict[str, Any]:
    """The job's budget document (``BudgetKeeper.document`` shape) from every worker's file; ``base``
    gives the caps."""
    docs = [doc for _, doc in _entries(folder)]
    totals = _totals(docs)
    reasons = [doc["stopped"] for doc in docs if doc.get("stopped")]
    return {**base,
            "spent": {"rollouts": int(totals["rollouts"]), "sandbox_seconds": round(totals["seconds"], 1),
                      **{k: totals[k] for k in MONEY if any(k in doc for doc in docs)}},
            "stopped": bool(reasons), "reason": reasons[0] if reasons else None,
            "cancelled": sorted({k for doc in docs for k in doc.get("cancelled", [])}),
            "not_started": sorted({k for doc in docs for k in doc.get("not_started", [])})}


def _entries(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(folder.glob("worker-*.json")):
        with contextlib.suppress(OSError, ValueError):  # written atomically; a vanished file has nothing left
            out.append((path.name, json.loads(path.read_text())))
    return out


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, TypeError, ValueError):
        return False
    except PermissionError:
        return True
    return True


def _totals(docs: Any) -> dict[str, float]:
    now = time.monotonic()
    out = {"rollouts": 0.0, "seconds": 0.0, "tokens": 0.0, "cost_usd": 0.0}
    for doc in docs:
        out["rollouts"] += doc.get("rollouts", 0)
        out["seconds"] += doc.get("finished_seconds", 0.0)
        if _alive(doc.get("pid")):
            out["seconds"] += sum(now - began for began in doc.get("running", []))
        for key in MONEY:
            out[key] += doc.get(key, 0)
    return out
