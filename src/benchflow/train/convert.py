"""``bench train convert``: rollouts of job folders as trainer rows (contracts §8.3, §4.8).

Per rollout (a trial with ``result.json``), in this order: not in
``--canonical-selection`` → ``skipped_not_selected``; an agent error, a
verifier error or a partial trajectory → ``skipped_terminal_error``; reward
below ``--min-reward`` (or none) → ``skipped_below_min_reward``; neither
``llm_trajectory.jsonl`` nor (a Harbor trial) an ATIF ``agent/trajectory.json``
→ ``skipped_no_llm_trajectory``; then the rollout's conversations
(:mod:`.conversations`, which counts what it cannot use): ``--row-mode rollout``
makes one row from the last exchange (its messages hold the whole conversation);
``exchange`` one row per exchange. Rows hold the parent agent's
conversation; ``--subagent-rows`` adds each subagent's (:mod:`.threads`), tagged
``subagent: {thread, tool_call_id, tool_name}`` with the parent's spawning call.

``--format branch-tree`` reads branched trials instead, a row per branch child
(:mod:`.branch`), and writes ``--pairs``.

Group advantages are computed over every scored rollout of the source, not
only the rows written: ``--min-reward 1`` keeps the winners' rows with the
advantage they had among all their group's samples.
"""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError, UserError
from benchflow.util import atomic

from . import advantage, rules, selection
from .branch import branched, trial_rows
from .conversations import conversations, has_record
from .formats import BUILDERS, FORMATS, Sample
from .output import require_pyarrow, sink_for
from .redaction import redact
from .reward_vector import reward_vector
from .source import Rollout, read_rollout, trial_folders

BRANCH_ONLY = ("pairs", "pairs_any_request", "include_oracle")


class RowCountMismatch(BenchError):
    """``--expected-rows`` disagreed with the rows the conversion would write (nothing was written)."""

    category = "train_rows"
    exit_code = 1


@dataclass
class ConvertOptions:
    source: Path
    out: Path
    format: str = "prime-sft"
    min_reward: float | None = None
    row_mode: str = "rollout"
    manifest: Path | None = None
    expected_rows: int | None = None
    canonical_selection: Path | None = None
    redact: bool = True
    context_policy: str = "full"
    tokenizer: str | None = None
    tokenizer_revision: str | None = None
    max_length: int | None = None
    subagent_rows: bool = False
    reward_vector: bool = False
    group_advantage: str | None = None
    group_by: str | None = None
    pairs: Path | None = None
    pairs_any_request: bool = False
    include_oracle: bool = False


@dataclass
class Stats:
    rollouts_seen: int = 0
    exchanges_seen: int = 0
    rows_written: int = 0
    rows_with_tool_calls: int = 0
    subagent_rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    counts: rules.Counts = field(default_factory=rules.Counts)
    sources: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def document(self, options: ConvertOptions) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "kind": "benchflow.train-convert-manifest", "schema_version": 1, "format": options.format,
            "row_mode": options.row_mode, "output": str(options.out), "source": str(options.source),
            "redacted": options.redact, "group_advantage": options.group_advantage,
            "rollouts_seen": self.rollouts_seen, "exchanges_seen": self.exchanges_seen,
            "rows_written": self.rows_written, "rows_with_tool_calls": self.rows_with_tool_calls}
        if options.subagent_rows:
            doc["subagent_rows"] = self.subagent_rows
        for reason in sorted(self.skipped):
            doc[f"skipped_{reason}"] = self.skipped[reason]
        doc.update({"tool_call_ids_rewritten": self.counts.tool_call_ids_rewritten,
                    "tool_messages_merged": self.counts.tool_messages_merged,
                    "messages_dropped": self.counts.messages_dropped,
                    "sources": [{"job": job, "rollouts": n} for job, n in sorted(self.sources.items())],
                    "notes": self.notes})
        return doc


def check_options(o: ConvertOptions) -> None:
    """Refuse a bad combination before anything is read (one line each)."""
    if o.format not in FORMATS:
        raise UserError(f"--format {o.format!r}: unknown; use one of {', '.join(FORMATS)}")
    if o.row_mode not in ("rollout", "exchange"):
        raise UserError(f"--row-mode {o.row_mode!r}: use rollout or exchange")
    if o.format != "branch-tree" and any(getattr(o, name) for name in BRANCH_ONLY):
        raise UserError("--pairs, --pairs-any-request and --include-oracle apply to --format branch-tree only")
    if o.context_policy not in ("full", "message-window"):
        raise UserError(f"--context-policy {o.context_policy!r}: use full or message-window")
    if o.context_policy == "message-window" and (o.format != "trl-sft" or not o.tokenizer or not o.max_length):
        raise UserError("--context-policy message-window needs --format trl-sft, --tokenizer and --max-length")
    if o.reward_vector and o.format in ("branch-tree", "verl-sft"):
        raise UserError(f"--reward-vector: --format {o.format} has no reward_vector column; use prime-sft or trl-sft")
    if o.subagent_rows and o.format in ("openenv-episodes", "branch-tree"):
        raise UserError(f"--subagent-rows: --format {o.format} writes one row per rollout or child; use a row format")
    if o.format == "openenv-episodes" and o.row_mode == "exchange":
        raise UserError("--format openenv-episodes writes one episode per rollout; drop --row-mode exchange")
    if o.group_advantage is not None and o.group_advantage not in advantage.METHODS:
        raise UserError(f"--group-advantage {o.group_advantage!r}: use grpo or loo")
    if o.expected_rows is not None and o.expected_rows < 0:
        raise UserError("--expected-rows must be 0 or more")
    if o.out.is_dir():
        raise UserError(f"--out {o.out}: is a folder; give a file path")
    if o.pairs is not None and (o.pairs.is_dir() or o.pairs.resolve() == o.out.resolve()):
        raise UserError(f"--pairs {o.pairs}: give a file path other than --out")
    if o.format == "verl-sft":
        require_pyarrow()


def _skip_reason(rollout: Rollout, o: ConvertOptions, selected: set[str] | None) -> str | None:
    if selected is not None and rollout.trial.name not in selected and rollout.rel not in selected:
        return "not_selected"
    result = rollout.result
    if result.error or result.verifier_error or result.partial_trajectory:
        return "terminal_error"
    if o.min_reward is not None and (result.reward is None or result.reward < o.min_reward):
        return "below_min_reward"
    if not has_record(rollout):
        return "no_llm_trajectory"
    return None


def _samples(rollout: Rollout, o: ConvertOptions, stats: Stats, extra: dict[str, Any], windower: Any):
    for found in conversations(rollout, o, stats):
        messages = rules.apply(found.messages, stats.counts, trim=o.format == "prime-sft")
        tools = found.tools
        if o.redact:
            messages, tools = redact(messages), redact(tools)
        if windower is not None:
            messages = windower.fit(messages, tools)
            if messages is None:
                stats.skipped["over_max_length"] += 1
                continue
        if not messages or messages[-1]["role"] != "assistant":
            stats.skipped["no_answer"] += 1
            continue
        row_extra = dict(extra) | ({"subagent": found.subagent} if found.subagent is not None else {})
        if found.subagent is not None:
            stats.subagent_rows += 1
        yield Sample(rollout, found.index, messages, tools, found.source_path, row_extra, source=found.source)


def convert(o: ConvertOptions) -> dict[str, Any]:
    """Write the rows (and ``--manifest``); returns the manifest document.

    Raises:
        UserError: bad options or source.
        RowCountMismatch: ``--expected-rows`` differs (nothing written).
    """
    check_options(o)
    if o.format == "branch-tree":
        return _convert_branches(o)
    selected = selection.rollout_names(o.canonical_selection) if o.canonical_selection is not None else None
    group_fields = advantage.parse_group_by(o.group_by)
    windower = None
    if o.context_policy == "message-window":
        from .window import Windower

        windower = Windower.load(o.tokenizer, o.tokenizer_revision, o.max_length)
    stats = Stats()
    rollouts: list[Rollout] = []
    for trial, job, rel in trial_folders(o.source):
        if not trial.result.is_file():
            stats.skipped["unfinished"] += 1
            continue
        rollout = read_rollout(trial, job, rel, stats.notes)
        if rollout is None:
            stats.skipped["unreadable"] += 1
            continue
        rollouts.append(rollout)
        stats.sources[job] += 1
    stats.rollouts_seen = len(rollouts)
    groups = advantage.by_group(rollouts, group_fields, o.group_advantage) if o.group_advantage else {}
    build = BUILDERS[o.format]
    with atomic.open_for_write(o.out) as handle:
        sink = sink_for(o.format, handle)
        for rollout in rollouts:
            reason = _skip_reason(rollout, o, selected)
            if reason:
                stats.skipped[reason] += 1
                continue
            extra: dict[str, Any] = {}
            if o.group_advantage:
                extra["group"], extra["advantage"] = groups[id(rollout)]
            if o.reward_vector:
                extra["reward_vector"] = reward_vector(rollout)
            for sample in _samples(rollout, o, stats, extra, windower):
                row = rules.strip_banned(build(sample))
                sink.add(row)
                stats.rows_written += 1
                stats.rows_with_tool_calls += rules.has_tool_calls(sample.messages)
        sink.close()
        if o.expected_rows is not None and stats.rows_written != o.expected_rows:
            raise RowCountMismatch(f"--expected-rows {o.expected_rows}: the conversion makes {stats.rows_written} "
                                   f"row(s); nothing was written to {o.out}")
    return _finish(o, stats)


def _finish(o: ConvertOptions, stats: Stats) -> dict[str, Any]:
    document = stats.document(o)
    if o.manifest is not None:
        atomic.write_json(o.manifest, document)
    return document


def _convert_branches(o: ConvertOptions) -> dict[str, Any]:
    """``--format branch-tree``: a row per branch child (``rollouts_seen`` counts children), ``--pairs``."""
    selected = selection.rollout_names(o.canonical_selection) if o.canonical_selection is not None else None
    stats = Stats()
    trials = list(branched(o.source))
    with ExitStack() as stack:
        sink = sink_for(o.format, stack.enter_context(atomic.open_for_write(o.out)))
        pairs = sink_for(o.format, stack.enter_context(atomic.open_for_write(o.pairs))) if o.pairs else None
        for trial, rel in trials:
            if selected is not None and trial.name not in selected and rel not in selected:
                stats.skipped["not_selected"] += 1
                continue
            stats.sources[rel.rpartition("/")[0] or "."] += 1
            for kind, row in trial_rows(trial, rel, o, stats):
                row = rules.strip_banned(row)
                if kind == "pair":
                    if pairs is not None:
                        pairs.add(row)
                    continue
                sink.add(row)
                stats.rows_written += 1
                stats.rows_with_tool_calls += rules.has_tool_calls(row["continuation"])
        if o.expected_rows is not None and stats.rows_written != o.expected_rows:
            raise RowCountMismatch(f"--expected-rows {o.expected_rows}: the conversion makes "
                                   f"{stats.rows_written} row(s); nothing was written to {o.out}")
    return _finish(o, stats)
