"""Open, write and read the collector store (one SQLite file).

Writers (``bench preferences pairs/import``, the ``bench view --rate`` server)
open it with :func:`open_store`, which applies pending migrations. Readers that
must not change it (``bench assess assign/import-vote``, ``bench preferences
rank``) use :func:`open_readonly`: a ``mode=ro`` URI, so SQLite itself refuses
any write. The store folder holds the file as ``workspace.sqlite3``; every
function that takes a path accepts the folder or the file (``*.sqlite3``,
``*.sqlite``, ``*.db``, e.g. a backup copy).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from benchflow.collector.records import (
    CHOICES,
    RATER_KINDS,
    Assignment,
    Output,
    Pair,
    Vote,
    now,
)
from benchflow.collector.schema import MIGRATIONS, SCHEMA_VERSION, VERSION_TABLE
from benchflow.errors import UserError

DB_NAME = "workspace.sqlite3"
"""The file name of the store inside a store folder."""


class StoreError(UserError):
    """A store that is missing, not a collector store, or newer than this BenchFlow."""

    category = "collector_store_error"


def db_path(path: str | Path) -> Path:
    """The SQLite file for ``path``: a ``*.sqlite3``/``*.sqlite``/``*.db`` file itself, else ``<folder>/workspace.sqlite3``."""
    p = Path(path)
    return p if p.suffix in (".sqlite3", ".sqlite", ".db") and not p.is_dir() else p / DB_NAME


def _connect(target: str, *, uri: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(target, uri=uri, timeout=10.0, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _version(conn: sqlite3.Connection) -> int:
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'").fetchone()
    if not has:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def _migrate(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(VERSION_TABLE)
        current = _version(conn)
        if current > SCHEMA_VERSION:
            raise StoreError(f"collector store schema version {current} is newer than {SCHEMA_VERSION}; upgrade benchflow")
        for number in range(current + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[number - 1].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (number, now()))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def create_store(path: str | Path) -> sqlite3.Connection:
    """Create a new store file (refusing one that exists) at the newest schema."""
    target = db_path(path)
    if target.exists():
        raise StoreError(f"{target}: already exists; give a new --store folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    conn = _connect(str(target), uri=False)
    _migrate(conn)
    return conn


def open_store(path: str | Path) -> sqlite3.Connection:
    """Open an existing store to write, applying pending migrations."""
    target = db_path(path)
    if not target.is_file():
        raise StoreError(f"{target}: no collector store here; make one with bench preferences pairs --store")
    conn = _connect(str(target), uri=False)
    try:
        _check_is_store(conn, target)
        _migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def open_readonly(path: str | Path) -> sqlite3.Connection:
    """Open a store read-only (``mode=ro`` URI): any write raises ``sqlite3.OperationalError``."""
    target = db_path(path)
    if not target.is_file():
        raise StoreError(f"{target}: no collector store here; make one with bench preferences pairs --store")
    conn = _connect(f"file:{quote(str(target.resolve()))}?mode=ro", uri=True)
    try:
        _check_is_store(conn, target)
        version = _version(conn)
        if version > SCHEMA_VERSION:
            raise StoreError(f"{target}: schema version {version} is newer than {SCHEMA_VERSION}; upgrade benchflow")
        if version < SCHEMA_VERSION:
            raise StoreError(f"{target}: schema version {version} is older than {SCHEMA_VERSION}; open it once with a writer (bench preferences import) to migrate")
    except BaseException:
        conn.close()
        raise
    return conn


def _check_is_store(conn: sqlite3.Connection, target: Path) -> None:
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{target}: not a SQLite collector store ({exc})") from exc
    if tables and "schema_version" not in tables:
        raise StoreError(f"{target}: a SQLite file without a schema_version table is not a collector store")


# ---- metadata -------------------------------------------------------------------------------


def set_meta(conn: sqlite3.Connection, items: dict[str, str]) -> None:
    """Set store-wide facts (seed, frozen rubric, output folder kind, …)."""
    conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(items.items()))


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {r["key"]: r["value"] for r in conn.execute("SELECT key, value FROM meta")}


# ---- writes -----------------------------------------------------------------------------------


def _insert(conn: sqlite3.Connection, table: str, row: object, skip: Iterable[str] = ()) -> None:
    values = {k: v for k, v in dataclasses.asdict(row).items() if k not in set(skip)}  # type: ignore[call-overload]
    cols = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(values.values()))


def add_output(conn: sqlite3.Connection, output: Output) -> None:
    _insert(conn, "outputs", output)


def add_pair(conn: sqlite3.Connection, pair: Pair) -> None:
    _insert(conn, "pairs", dataclasses.replace(pair, swapped=int(pair.swapped)))  # type: ignore[arg-type]


def add_assignment(conn: sqlite3.Connection, assignment: Assignment) -> None:
    if assignment.rater_kind not in RATER_KINDS:
        raise StoreError(f"rater kind {assignment.rater_kind!r}: use one of {', '.join(RATER_KINDS)}")
    _insert(conn, "assignments", assignment)


def add_vote(conn: sqlite3.Connection, vote: Vote) -> None:
    """Insert a vote and its per-aspect scores in one transaction (caller may wrap several)."""
    if vote.choice not in CHOICES:
        raise StoreError(f"vote choice {vote.choice!r}: use one of {', '.join(CHOICES)}")
    if vote.rater_kind not in RATER_KINDS:
        raise StoreError(f"rater kind {vote.rater_kind!r}: use one of {', '.join(RATER_KINDS)}")
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN IMMEDIATE")
    try:
        _insert(conn, "votes", vote, skip=("scores",))
        conn.executemany(
            "INSERT INTO scores (vote_id, output_id, aspect, score) VALUES (?, ?, ?, ?)",
            [(vote.vote_id, out, aspect, float(score)) for (out, aspect), score in vote.scores.items()],
        )
        if own:
            conn.execute("COMMIT")
    except BaseException:
        if own:
            conn.execute("ROLLBACK")
        raise


# ---- reads ------------------------------------------------------------------------------------


def _row(cls: type, row: sqlite3.Row) -> object:
    return cls(**dict(row))


def outputs(conn: sqlite3.Connection) -> dict[str, Output]:
    rows = conn.execute("SELECT * FROM outputs ORDER BY created_at, output_id")
    return {r["output_id"]: _row(Output, r) for r in rows}  # type: ignore[misc]


def get_output(conn: sqlite3.Connection, output_id: str) -> Output | None:
    r = conn.execute("SELECT * FROM outputs WHERE output_id = ?", (output_id,)).fetchone()
    return _row(Output, r) if r else None  # type: ignore[return-value]


def _pair(r: sqlite3.Row) -> Pair:
    p: Pair = _row(Pair, r)  # type: ignore[assignment]
    return dataclasses.replace(p, swapped=bool(p.swapped))


def pairs(conn: sqlite3.Connection) -> list[Pair]:
    return [_pair(r) for r in conn.execute("SELECT * FROM pairs ORDER BY position")]


def get_pair(conn: sqlite3.Connection, pair_id: str) -> Pair | None:
    r = conn.execute("SELECT * FROM pairs WHERE pair_id = ?", (pair_id,)).fetchone()
    return _pair(r) if r else None


def get_assignment(conn: sqlite3.Connection, assignment_id: str) -> Assignment | None:
    r = conn.execute("SELECT * FROM assignments WHERE assignment_id = ?", (assignment_id,)).fetchone()
    return _row(Assignment, r) if r else None  # type: ignore[return-value]


def assignments(conn: sqlite3.Connection, rater_id: str | None = None) -> list[Assignment]:
    sql, args = "SELECT * FROM assignments", ()
    if rater_id is not None:
        sql, args = sql + " WHERE rater_id = ?", (rater_id,)
    return [_row(Assignment, r) for r in conn.execute(sql + " ORDER BY created_at, assignment_id", args)]  # type: ignore[misc]


def _scores(conn: sqlite3.Connection, vote_ids: list[str]) -> dict[str, dict[tuple[str, str], float]]:
    found: dict[str, dict[tuple[str, str], float]] = {v: {} for v in vote_ids}
    for r in conn.execute("SELECT vote_id, output_id, aspect, score FROM scores"):
        if r["vote_id"] in found:
            found[r["vote_id"]][(r["output_id"], r["aspect"])] = r["score"]
    return found


def votes(conn: sqlite3.Connection, *, assignment_id: str | None = None) -> list[Vote]:
    """Every vote (or one assignment's), oldest first, with its scores."""
    sql, args = "SELECT * FROM votes", ()
    if assignment_id is not None:
        sql, args = sql + " WHERE assignment_id = ?", (assignment_id,)
    rows = list(conn.execute(sql + " ORDER BY created_at, vote_id", args))
    scores = _scores(conn, [r["vote_id"] for r in rows])
    return [Vote(**dict(r), scores=scores[r["vote_id"]]) for r in rows]


def vote_ids(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT vote_id FROM votes")}
