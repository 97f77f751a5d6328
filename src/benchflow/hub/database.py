"""Opening the hub's database from ``--db``: SQLite by default, PostgreSQL through the same tables."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event

from benchflow.errors import ConfigError


def engine_for(url: str) -> Engine:
    """An engine for ``sqlite:///PATH`` or ``postgresql://…`` (driven by psycopg 3).

    Raises:
        ConfigError: another scheme (exit 2).
    """
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
        return create_engine(url, pool_pre_ping=True)
    raise ConfigError(f"--db {url!r}: give sqlite:///PATH or postgresql://USER@HOST:PORT/DB")


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cursor = dbapi_conn.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
