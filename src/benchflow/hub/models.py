"""The hub's tables (SQLAlchemy Core), the same on SQLite and PostgreSQL.

These are the current shape; :mod:`.migrations` is how a database gets
there (a test checks that a migrated database has exactly these columns).
Ids are integers; times are UTC ISO strings so both databases sort them alike.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

users = Table(
    "users", metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("created_at", String(32), nullable=False),
)

tokens = Table(
    "api_tokens", metadata,
    Column("id", Integer, primary_key=True),
    Column("user_id", Integer, ForeignKey("users.id"), nullable=False),
    Column("token_sha256", String(64), nullable=False, unique=True),
    Column("created_at", String(32), nullable=False),
)

datasets = Table(
    "dataset_versions", metadata,
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

tasks = Table(
    "dataset_tasks", metadata,
    Column("id", Integer, primary_key=True),
    Column("dataset_id", Integer, ForeignKey("dataset_versions.id"), nullable=False),
    Column("name", String(100), nullable=False),
    Column("digest", String(80), nullable=False),
    Column("archive_key", String(80), nullable=False),
    Column("archive_size", BigInteger, nullable=False),
    UniqueConstraint("dataset_id", "name", name="uq_dataset_task"),
)

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True),
    Column("dataset_id", Integer, ForeignKey("dataset_versions.id")),
    Column("label", String(200)),
    Column("job_name", String(200), nullable=False),
    Column("pusher_id", Integer, ForeignKey("users.id"), nullable=False),
    Column("pushed_at", String(32), nullable=False),
    Column("bundle_key", String(80), nullable=False),
    Column("n_trials", Integer, nullable=False),
)

leaderboard = Table(
    "leaderboard_entries", metadata,
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
    Column("control", String(20)),
    Column("control_deviations", Text),
    Index("ix_leaderboard_dataset_score", "dataset_id", "score"),
)

trajectories = Table(
    "trajectory_captures", metadata,
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
