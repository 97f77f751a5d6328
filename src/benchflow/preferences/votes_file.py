"""``bench preferences import``: read a votes file (JSON lines or CSV), check every vote, add the new ones.

Fields of a vote (a JSON object per line, or a CSV header)::

    rater (or rater_id)   who voted                          required
    rater_kind            person | guest | model             default person
    left, right           the two output ids as shown        required unless pair_id is given
    pair_id               a pair of the store                optional
    assignment_id         an assignment of the store         optional
    choice                left | right | tie | skip          required
    vote_id               the vote's id                      default: a hash of the vote
    reason, shown_at, created_at, source                     optional
    scores                JSON: {"left"|"right"|OUTPUT_ID: {ASPECT: number}}
                          CSV: columns score.left.ASPECT, score.right.ASPECT

The whole file is checked before anything is written: a malformed row or an
unknown output refuses it (``--skip-unknown`` leaves unknown outputs out).
A vote whose id the store already has is left alone, so importing the same
file twice adds nothing.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.collector import store as collector
from benchflow.collector.records import CHOICES, RATER_KINDS, Vote, now
from benchflow.errors import ConfigError, UserError


@dataclass
class ImportReport:
    checked: int = 0
    added: int = 0
    already: int = 0
    unknown: int = 0
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--votes {path}: cannot read it ({exc})") from exc
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.lstrip().startswith("{"):
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ConfigError(f"--votes {path}:{number}: not JSON ({exc})") from exc
            if not isinstance(row, dict):
                raise ConfigError(f"--votes {path}:{number}: each line must be a JSON object")
            rows.append((number, row))
        return rows
    reader = csv.DictReader(io.StringIO(text))
    rows = []
    for number, raw in enumerate(reader, 2):
        row: dict[str, Any] = {}
        scores: dict[str, dict[str, str]] = {}
        for key, value in raw.items():
            if key is None or value in (None, ""):
                continue
            if key.startswith("score."):
                _, side, aspect = (key.split(".", 2) + ["", ""])[:3]
                scores.setdefault(side, {})[aspect] = value
            else:
                row[key.strip()] = value
        if scores:
            row["scores"] = scores
        rows.append((number, row))
    return rows


def _text(row: dict[str, Any], key: str, where: str, required: bool = False) -> str | None:
    value = row.get(key)
    if value is None or value == "":
        if required:
            raise ConfigError(f"{where}: '{key}' is missing")
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where}: '{key}' must be text")
    return value


def _scores(raw: Any, left: str, right: str, aspects: dict[str, dict[str, Any]] | None,
            where: str) -> dict[tuple[str, str], float]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: 'scores' must map left/right (or an output id) to {{aspect: number}}")
    out: dict[tuple[str, str], float] = {}
    for side, by_aspect in raw.items():
        output = {"left": left, "right": right}.get(side, side)
        if output not in (left, right):
            raise ConfigError(f"{where}: scores for {side!r}, which is neither side of this vote")
        if not isinstance(by_aspect, dict):
            raise ConfigError(f"{where}: scores.{side} must map aspect to number")
        for aspect, value in by_aspect.items():
            try:
                number = float(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{where}: scores.{side}.{aspect} must be a number") from exc
            if aspects is not None:
                spec = aspects.get(aspect)
                if spec is None:
                    raise ConfigError(f"{where}: aspect {aspect!r} is not in the store's rubric "
                                      f"({', '.join(aspects)})")
                if not spec["min"] <= number <= spec["max"]:
                    raise ConfigError(f"{where}: scores.{side}.{aspect} = {value} is outside "
                                      f"{spec['min']}..{spec['max']}")
            out[(output, aspect)] = number
    return out


def _vote_id(fields: dict[str, Any]) -> str:
    key = "\0".join(str(fields.get(k) or "") for k in ("rater_id", "left_output", "right_output", "choice",
                                                        "created_at", "pair_id"))
    return "v_" + hashlib.sha256(key.encode()).hexdigest()[:16]


def import_votes(store_path: Path, votes_path: Path, *, source: str | None = None, skip_unknown: bool = False,
                 dry_run: bool = False) -> ImportReport:
    """Check every vote of ``votes_path``, then (unless ``dry_run``) add the new ones in one transaction.

    Raises:
        ConfigError: a malformed vote (names file, line and field; exit 2).
        UserError: a vote on an output the store does not have, without ``skip_unknown`` (exit 2).
    """
    conn = collector.open_readonly(store_path) if dry_run else collector.open_store(store_path)
    try:
        outputs = collector.outputs(conn)
        pairs = {p.pair_id: p for p in collector.pairs(conn)}
        assignments = {a.assignment_id: a for a in collector.assignments(conn)}
        meta = collector.read_meta(conn)
        aspects = ({a["id"]: a for a in json.loads(meta["rubric"])["aspects"]} if "rubric" in meta else None)
        have = collector.vote_ids(conn)
        report = ImportReport(dry_run=dry_run)
        new: list[Vote] = []
        unknown: list[str] = []
        for number, row in _rows(votes_path):
            where = f"--votes {votes_path}:{number}"
            report.checked += 1
            pair_id = _text(row, "pair_id", where)
            pair = pairs.get(pair_id) if pair_id else None
            if pair_id and pair is None:
                unknown.append(f"{where}: pair {pair_id}")
                continue
            left = _text(row, "left", where) or _text(row, "left_output", where) or (pair.left_output if pair else None)
            right = (_text(row, "right", where) or _text(row, "right_output", where)
                     or (pair.right_output if pair else None))
            if not left or not right:
                raise ConfigError(f"{where}: give 'left' and 'right' output ids, or a 'pair_id'")
            if left == right:
                raise ConfigError(f"{where}: 'left' and 'right' are the same output")
            if pair and {left, right} != {pair.left_output, pair.right_output}:
                raise ConfigError(f"{where}: 'left'/'right' are not the outputs of pair {pair_id}")
            missing = [o for o in (left, right) if o not in outputs]
            if missing:
                unknown.append(f"{where}: output {missing[0]}")
                continue
            choice = _text(row, "choice", where, required=True)
            if choice not in CHOICES:
                raise ConfigError(f"{where}: choice {choice!r}: use one of {', '.join(CHOICES)}")
            kind = _text(row, "rater_kind", where) or "person"
            if kind not in RATER_KINDS:
                raise ConfigError(f"{where}: rater_kind {kind!r}: use one of {', '.join(RATER_KINDS)}")
            rater = _text(row, "rater", where) or _text(row, "rater_id", where, required=True)
            assignment = _text(row, "assignment_id", where)
            if assignment and assignment not in assignments:
                raise ConfigError(f"{where}: assignment {assignment} is not in the store")
            fields = {"rater_id": rater, "rater_kind": kind, "left_output": left, "right_output": right,
                      "choice": choice, "pair_id": pair.pair_id if pair else None, "assignment_id": assignment,
                      "reason": _text(row, "reason", where), "source": source or _text(row, "source", where),
                      "shown_at": _text(row, "shown_at", where),
                      "created_at": _text(row, "created_at", where) or now()}
            vote_id = _text(row, "vote_id", where) or _vote_id({**fields, "created_at": row.get("created_at")})
            scores = _scores(row.get("scores"), left, right, aspects, where)
            if vote_id in have:
                report.already += 1
                continue
            have.add(vote_id)
            new.append(Vote(vote_id=vote_id, scores=scores, **fields))
        if unknown and not skip_unknown:
            raise UserError(f"{unknown[0]} is not in the store ({len(unknown)} vote(s) on unknown outputs or "
                            "pairs); nothing imported. Pass --skip-unknown to leave them out")
        report.unknown = len(unknown)
        report.notes = unknown
        report.added = len(new)
        if not dry_run and new:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for vote in new:
                    collector.add_vote(conn, vote)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return report
    finally:
        conn.close()
