"""The collector store's schema, as numbered migrations.

A collector (``bench view --rate``, or any third-party tool that follows
docs/collector-store.md) writes one SQLite file; ``bench preferences`` and
``bench assess assign/import-vote`` read it. Each migration is applied once, in
order, inside one transaction, and recorded in ``schema_version``; a reader
refuses a file whose version is newer than the newest it knows.
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: outputs, pairs, assignments, votes, per-aspect scores, store metadata.
    """
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE outputs (
        output_id    TEXT PRIMARY KEY,
        task_id      TEXT NOT NULL,
        task_version TEXT NOT NULL,
        agent        TEXT,
        model        TEXT,
        condition    TEXT,
        kind         TEXT NOT NULL DEFAULT 'trial' CHECK (kind IN ('trial', 'item', 'golden')),
        trial_path   TEXT,
        source_path  TEXT NOT NULL,
        bundle_path  TEXT,
        entry        TEXT,
        digest       TEXT,
        created_at   TEXT NOT NULL
    );
    CREATE INDEX outputs_task ON outputs (task_id, task_version);
    CREATE TABLE pairs (
        pair_id      TEXT PRIMARY KEY,
        position     INTEGER NOT NULL,
        task_id      TEXT NOT NULL,
        task_version TEXT NOT NULL,
        left_output  TEXT NOT NULL REFERENCES outputs (output_id),
        right_output TEXT NOT NULL REFERENCES outputs (output_id),
        swapped      INTEGER NOT NULL DEFAULT 0 CHECK (swapped IN (0, 1)),
        created_at   TEXT NOT NULL,
        CHECK (left_output <> right_output)
    );
    CREATE TABLE assignments (
        assignment_id TEXT PRIMARY KEY,
        rater_id      TEXT NOT NULL,
        rater_kind    TEXT NOT NULL CHECK (rater_kind IN ('person', 'guest', 'model')),
        pair_id       TEXT NOT NULL REFERENCES pairs (pair_id),
        created_at    TEXT NOT NULL,
        UNIQUE (rater_id, pair_id)
    );
    CREATE TABLE votes (
        vote_id       TEXT PRIMARY KEY,
        pair_id       TEXT REFERENCES pairs (pair_id),
        assignment_id TEXT REFERENCES assignments (assignment_id),
        rater_id      TEXT NOT NULL,
        rater_kind    TEXT NOT NULL CHECK (rater_kind IN ('person', 'guest', 'model')),
        left_output   TEXT NOT NULL REFERENCES outputs (output_id),
        right_output  TEXT NOT NULL REFERENCES outputs (output_id),
        choice        TEXT NOT NULL CHECK (choice IN ('left', 'right', 'tie', 'skip')),
        reason        TEXT,
        source        TEXT,
        shown_at      TEXT,
        created_at    TEXT NOT NULL,
        CHECK (left_output <> right_output)
    );
    CREATE INDEX votes_pair ON votes (pair_id);
    CREATE INDEX votes_assignment ON votes (assignment_id);
    CREATE TABLE scores (
        vote_id   TEXT NOT NULL REFERENCES votes (vote_id),
        output_id TEXT NOT NULL REFERENCES outputs (output_id),
        aspect    TEXT NOT NULL,
        score     REAL NOT NULL,
        PRIMARY KEY (vote_id, output_id, aspect)
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
"""The newest schema this BenchFlow writes and reads."""

VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
)
"""
