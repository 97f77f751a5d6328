"""The sidecar's event log: hash-chained JSON lines, appended under a lock.

::

    <sidecar>/                 e.g. <completed-rollout>/assessment
      events.jsonl             one event per line; line n holds the SHA-256 of line n-1
      label.json               the label the log calls for (refreshed by reduce, label --write)
      frozen/                  attempt-a.json attempt-b.json rubric<suffix> protocol.json
      .lock                    flock(2) held by a writer for its whole read-check-append

An event is ``{schema, seq, type, prev, recorded_at, idempotency_key, payload,
sha256}``; ``sha256`` is the hash of the canonical JSON of every other field,
so changing one byte of any event breaks the chain from there on. A writer
reads and checks the whole log, then replaces the file atomically with one more
line; a file cut short (no final newline, a line that is not JSON) is reported
as a torn write and nothing is appended to it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchflow.assess import AssessmentError
from benchflow.assess.digest import canonical, sha256_json
from benchflow.util.atomic import write_bytes

EVENT_SCHEMA = "benchflow.assessment-event.v1"


@dataclass(frozen=True)
class Sidecar:
    """Paths of one assessment's sidecar folder."""

    root: Path

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def label(self) -> Path:
        return self.root / "label.json"

    @property
    def frozen(self) -> Path:
        return self.root / "frozen"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"


class LogBroken(AssessmentError):
    """The log does not verify: torn, edited, or out of order. Exit 1 where it is the answer to a check."""

    exit_code = 1


def event_hash(event: dict[str, Any]) -> str:
    return sha256_json({k: v for k, v in event.items() if k != "sha256"})


def read_events(sidecar: Sidecar) -> list[dict[str, Any]]:
    """Every event, each checked against its hash and its predecessor.

    Raises:
        LogBroken: a torn last line, a line that is not JSON, a broken hash or chain link.
        AssessmentError: no log (not an assessment sidecar).
    """
    if not sidecar.events.is_file():
        raise AssessmentError(f"{sidecar.root}: not an assessment sidecar (no events.jsonl); start one with "
                              "bench assess create")
    data = sidecar.events.read_bytes()
    if data and not data.endswith(b"\n"):
        raise LogBroken(f"{sidecar.events}: torn write: the last line has no newline (a write was cut short)")
    events: list[dict[str, Any]] = []
    prev = None
    for number, line in enumerate(data.splitlines(), start=1):
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise LogBroken(f"{sidecar.events} line {number}: not JSON ({exc.__class__.__name__}): torn or "
                            "edited") from exc
        if not isinstance(event, dict) or event.get("schema") != EVENT_SCHEMA:
            raise LogBroken(f"{sidecar.events} line {number}: not a {EVENT_SCHEMA} event")
        if event.get("sha256") != event_hash(event):
            raise LogBroken(f"{sidecar.events} line {number}: sha256 does not match the event's content "
                            "(edited after it was written)")
        if event.get("prev") != prev or event.get("seq") != number - 1:
            raise LogBroken(f"{sidecar.events} line {number}: chain broken (prev/seq do not follow line "
                            f"{number - 1})")
        prev = event["sha256"]
        events.append(event)
    if not events:
        raise LogBroken(f"{sidecar.events}: empty log")
    return events


@contextlib.contextmanager
def locked(sidecar: Sidecar) -> Iterator[None]:
    """Hold the sidecar's writer lock (blocking) for the block."""
    sidecar.root.mkdir(parents=True, exist_ok=True)
    with open(sidecar.lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Appended:
    """The event a write recorded, and whether it was recorded before (an idempotent retry)."""

    event: dict[str, Any]
    existing: bool


def default_key(kind: str, payload: dict[str, Any]) -> str:
    """The idempotency key of a write without ``--idempotency-key``: derived from its inputs."""
    return "auto:" + sha256_json({"type": kind, "payload": payload})[:32]


class Writer:
    """The log as one writer holding the lock sees it: verified events, and ``append``."""

    def __init__(self, sidecar: Sidecar, events: list[dict[str, Any]]) -> None:
        self.sidecar = sidecar
        self.events = events

    def recorded(self, kind: str, payload: dict[str, Any], key: str) -> dict[str, Any] | None:
        """The event already recorded under ``key`` with this payload (a retry), else None.

        Raises:
            AssessmentError: ``key`` was used for another write.
        """
        for event in self.events:
            if event["idempotency_key"] == key:
                if event["type"] == kind and event["payload"] == payload:
                    return event
                raise AssessmentError(f"--idempotency-key {key!r} was already used for another write "
                                      f"(event {event['sha256'][:12]}, {event['type']}); use a new key")
        return None

    def candidate(self, kind: str, payload: dict[str, Any], key: str) -> dict[str, Any]:
        """The event ``append`` would write next (hashed, chained), not yet written."""
        event: dict[str, Any] = {
            "schema": EVENT_SCHEMA,
            "seq": len(self.events),
            "type": kind,
            "prev": self.events[-1]["sha256"] if self.events else None,
            "recorded_at": datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "idempotency_key": key,
            "payload": payload,
        }
        event["sha256"] = event_hash(event)
        return event

    def append(self, event: dict[str, Any]) -> None:
        """Write the log again with ``event`` (from :meth:`candidate`) as its last line, atomically."""
        old = self.sidecar.events.read_bytes() if self.events else b""
        write_bytes(self.sidecar.events, old + canonical(event) + b"\n")
        self.events.append(event)


@contextlib.contextmanager
def writer(sidecar: Sidecar, *, create: bool = False) -> Iterator[Writer]:
    """The lock held, the log read and verified: a :class:`Writer` for one read-check-append.

    With ``create`` a missing log is an empty one (``bench assess create``).
    """
    if not create:
        read_events(sidecar)  # not a sidecar, or a broken log: refused before anything is written here
    with locked(sidecar):
        events = [] if create and not sidecar.events.exists() else read_events(sidecar)
        yield Writer(sidecar, events)
