"""The Hugging Face trace datasets BenchFlow knows by name (``bench tasks list-sources``).

An alias stands for a dataset id, the trace format its rows are in and the
split to read; ``bench tasks generate --from-hf`` takes an alias or any
``org/name`` id (whose format is then detected row by row).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import client


@dataclass(frozen=True)
class TraceSource:
    alias: str
    repo_id: str
    format: str
    split: str
    description: str


SOURCES: tuple[TraceSource, ...] = (
    TraceSource("opentraces-test", "opentraces/opentraces-test", "opentraces", "train",
                "A small opentraces sample: coding-agent sessions with outcomes, for trying tasks generate"),
    TraceSource("opentraces", "opentraces/opentraces", "opentraces", "train",
                "Coding-agent sessions in the opentraces format, with per-trace outcome labels"),
    TraceSource("claude-code-sessions", "benchflow/claude-code-sessions", "claude-code", "train",
                "Claude Code session transcripts (stream JSON lines), one session per row"),
)


def resolve(name: str) -> TraceSource:
    """An alias's entry, or an ad-hoc entry for an ``org/name`` id (format detected per row).

    Raises:
        UserError: neither a known alias nor an ``org/name`` id (exit 2).
    """
    for source in SOURCES:
        if name in (source.alias, source.repo_id):
            return source
    if "/" not in name:
        from benchflow.errors import UserError

        known = ", ".join(s.alias for s in SOURCES)
        raise UserError(f"--from-hf {name!r}: not a known alias ({known}; see bench tasks list-sources) "
                        "nor an org/name dataset id")
    client.check_repo_id(name, "--from-hf")
    return TraceSource(name, name, "auto", "train", "")
