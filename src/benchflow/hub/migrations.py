"""The hub database's upgrade path: numbered steps and a ``hub_schema_version`` table.

``bench hub serve`` runs :func:`upgrade` before it serves: every step above
the database's version runs in order, each in its own transaction with the
version bump, so a crash leaves the database at a step boundary. A step is
frozen once released: it holds the DDL as it was (step 1 creates the tables
as first shipped), and a later change to :mod:`.models` adds a step (an
``ALTER TABLE``, a new table or index) instead of editing an old one. A
database newer than this code is refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
)

from benchflow.errors import UserError

_version = Table("hub_schema_version", MetaData(), Column("version", Integer, nullable=False))


def _step_1(conn: Connection) -> None:
    """The tables as first shipped."""
    md = MetaData()
    Table(
        "users", md,
        Column("id", Integer, primary_key=True),
        Column("name", String(100), nullable=False, unique=True),
        Column("created_at", String(32), nullable=False),
    )

    Table(
        "api_tokens", md,
        Column("id", Integer, primary_key=True),
        Column("user_id", Integer, ForeignKey("users.id"), nullable=False),
        Column("token_sha256", String(64), nullable=False, unique=True),
        Column("created_at", String(32), nullable=False),
    )

    Table(
        "dataset_versions", md,
        Column("id", Integer, primary_key=True),
        Column("org", String(100), nullable=False),
        Column("name", String(100), nullable=False),
        Column("version", String(100), nullable=False),
        Column("description", Text),
        Column("license", String(200)),
        Column("kind", String(100)),
        Column("source_repo", Text),
        Column("source_commit", String(100)),
        Column("exporter", Text),
        Column("publisher_id", Integer, ForeignKey("users.id"), nullable=False),
        Column("published_at", String(32), nullable=False),
        Column("n_tasks", Integer, nullable=False),
        UniqueConstraint("org", "name", "version", name="uq_dataset_version"),
    )

    Table(
        "dataset_tasks", md,
        Column("id", Integer, primary_key=True),
        Column("dataset_id", Integer, ForeignKey("dataset_versions.id"), nullable=False),
        Column("name", String(100), nullable=False),
        Column("digest", String(80), nullable=False),
        Column("archive_key", String(80), nullable=False),
        Column("archive_size", BigInteger, nullable=False),
        UniqueConstraint("dataset_id", "name", name="uq_dataset_task"),
    )

    Table(
        "runs", md,
        Column("id", Integer, primary_key=True),
        Column("dataset_id", Integer, ForeignKey("dataset_versions.id")),
        Column("label", String(200)),
        Column("job_name", String(200), nullable=False),
        Column("pusher_id", Integer, ForeignKey("users.id"), nullable=False),
        Column("pushed_at", String(32), nullable=False),
        Column("bundle_key", String(80), nullable=False),
        Column("n_trials", Integer, nullable=False),
    )

    Table(
        "leaderboard_entries", md,
        Column("id", Integer, primary_key=True),
        Column("run_id", Integer, ForeignKey("runs.id"), nullable=False),
        Column("dataset_id", Integer, ForeignKey("dataset_versions.id")),
        Column("agent", String(200)),
        Column("model", String(200)),
        Column("tasks", Integer, nullable=False),
        Column("trials", Integer, nullable=False),
        Column("solve_rate", Float),
        Column("score", Float),
        Column("interval_low", Float),
        Column("interval_high", Float),
        Column("total_tokens", BigInteger),
        Column("cost_usd", Float),
        Index("ix_leaderboard_dataset_score", "dataset_id", "score"),
    )

    Table(
        "trajectory_captures", md,
        Column("id", Integer, primary_key=True),
        Column("digest", String(80), nullable=False, unique=True),
        Column("user_id", Integer, ForeignKey("users.id"), nullable=False),
        Column("status", String(20), nullable=False),
        Column("reason", Text),
        Column("blob_key", String(80), nullable=False),
        Column("size", BigInteger, nullable=False),
        Column("manifest", Text),
        Column("received_at", String(32), nullable=False),
        Column("verified_at", String(32)),
    )
    md.create_all(conn)


def _step_2(conn: Connection) -> None:
    """Control runs: which control an entry is (oracle, empty) and the tasks that went against it."""
    conn.exec_driver_sql("ALTER TABLE leaderboard_entries ADD COLUMN control VARCHAR(20)")
    conn.exec_driver_sql("ALTER TABLE leaderboard_entries ADD COLUMN control_deviations TEXT")


STEPS: list[tuple[int, str, Callable[[Connection], None]]] = [
    (1, "users, api tokens, dataset versions and tasks, runs, leaderboard entries, trajectory captures", _step_1),
    (2, "leaderboard entries: control (oracle, empty) and control_deviations", _step_2),
]
LATEST = STEPS[-1][0]


def current_version(conn: Connection) -> int:
    """The database's step (0 for an empty database)."""
    _version.create(conn, checkfirst=True)
    value = conn.execute(select(_version.c.version)).scalar()
    return int(value or 0)


def upgrade(engine: Engine) -> list[int]:
    """Run every step the database has not had; returns the steps run.

    Raises:
        UserError: the database is newer than this BenchFlow (exit 2).
    """
    with engine.begin() as conn:
        start = current_version(conn)
    if start > LATEST:
        raise UserError(f"the hub database is at schema step {start}, newer than this BenchFlow knows "
                        f"({LATEST}); upgrade BenchFlow before serving it")
    ran = []
    for number, _what, step in STEPS:
        if number <= start:
            continue
        with engine.begin() as conn:
            step(conn)
            if number == 1:
                conn.execute(_version.insert().values(version=1))
            else:
                conn.execute(_version.update().values(version=number))
        ran.append(number)
    return ran
