"""Row types of the collector store (one frozen dataclass per table)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime

RATER_KINDS = ("person", "guest", "model")
CHOICES = ("left", "right", "tie", "skip")
OUTPUT_KINDS = ("trial", "item", "golden")


def new_id(prefix: str) -> str:
    """An opaque id (``o_``, ``p_``, ``a_``, ``v_`` + 16 random hex): says nothing about its row."""
    return f"{prefix}_{secrets.token_hex(8)}"


def now() -> str:
    """The store's timestamp format: ISO 8601 in UTC with seconds, e.g. 2026-01-02T03:04:05Z."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Output:
    """One thing a rater looks at: a trial's output folder, or an item made outside BenchFlow."""

    output_id: str
    task_id: str
    task_version: str
    source_path: str
    agent: str | None = None
    model: str | None = None
    condition: str | None = None
    kind: str = "trial"
    trial_path: str | None = None
    bundle_path: str | None = None
    entry: str | None = None
    digest: str | None = None
    created_at: str = field(default_factory=now)


@dataclass(frozen=True)
class Pair:
    """Two outputs of one task version, in the order a rater sees them (``swapped``: sides shuffled)."""

    pair_id: str
    position: int
    task_id: str
    task_version: str
    left_output: str
    right_output: str
    swapped: bool = False
    created_at: str = field(default_factory=now)


@dataclass(frozen=True)
class Assignment:
    """One pair handed to one rater; persisted before the rater sees it."""

    assignment_id: str
    rater_id: str
    rater_kind: str
    pair_id: str
    created_at: str = field(default_factory=now)


@dataclass(frozen=True)
class Vote:
    """One rater's answer on two outputs as shown; ``scores`` maps (output_id, aspect) to a score."""

    vote_id: str
    rater_id: str
    rater_kind: str
    left_output: str
    right_output: str
    choice: str
    pair_id: str | None = None
    assignment_id: str | None = None
    reason: str | None = None
    source: str | None = None
    shown_at: str | None = None
    created_at: str = field(default_factory=now)
    scores: dict[tuple[str, str], float] = field(default_factory=dict, compare=False)
