"""The hub's reads and writes over :mod:`.models` (one place for every query)."""

from __future__ import annotations

from benchflow.errors import UserError
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from . import models
from .names import DatasetRef
from .timeutil import now

m = models


class AlreadyPublished(UserError):
    """The version exists; versions are immutable."""


@dataclass(frozen=True)
class Page:
    rows: list[dict[str, Any]]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


def _dicts(result) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in result]


def dataset(engine: Engine, ref: DatasetRef) -> dict[str, Any] | None:
    query = select(m.datasets).where(m.datasets.c.org == ref.org, m.datasets.c.name == ref.name,
                                     m.datasets.c.version == ref.version)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return dict(row._mapping) if row else None


def publish(engine: Engine, ref: DatasetRef, meta: dict[str, Any], user_id: int,
            task_rows: list[dict[str, Any]]) -> int:
    """Insert the version and its tasks in one transaction.

    Raises:
        AlreadyPublished: the version exists (also when two publishes race).
    """
    try:
        with engine.begin() as conn:
            dataset_id = conn.execute(insert(m.datasets).values(
                org=ref.org, name=ref.name, version=ref.version, publisher_id=user_id, published_at=now(),
                n_tasks=len(task_rows), **meta)).inserted_primary_key[0]
            if task_rows:
                conn.execute(insert(m.tasks), [{**row, "dataset_id": dataset_id} for row in task_rows])
    except IntegrityError as exc:
        raise AlreadyPublished(str(ref)) from exc
    return dataset_id


def datasets_page(engine: Engine, page: int, per_page: int) -> Page:
    query = (select(m.datasets).order_by(m.datasets.c.org, m.datasets.c.name, m.datasets.c.published_at.desc())
             .limit(per_page).offset((page - 1) * per_page))
    with engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(m.datasets)).scalar_one()
        return Page(_dicts(conn.execute(query)), page, per_page, total)


def tasks_page(engine: Engine, dataset_id: int, page: int, per_page: int) -> Page:
    query = (select(m.tasks.c.name, m.tasks.c.digest, m.tasks.c.archive_size)
             .where(m.tasks.c.dataset_id == dataset_id).order_by(m.tasks.c.name)
             .limit(per_page).offset((page - 1) * per_page))
    with engine.connect() as conn:
        total = conn.execute(select(m.datasets.c.n_tasks).where(m.datasets.c.id == dataset_id)).scalar_one()
        return Page(_dicts(conn.execute(query)), page, per_page, total)


def task(engine: Engine, dataset_id: int, name: str) -> dict[str, Any] | None:
    query = select(m.tasks).where(m.tasks.c.dataset_id == dataset_id, m.tasks.c.name == name)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return dict(row._mapping) if row else None


def task_digests(engine: Engine, dataset_id: int) -> dict[str, str]:
    query = select(m.tasks.c.name, m.tasks.c.digest).where(m.tasks.c.dataset_id == dataset_id)
    with engine.connect() as conn:
        return {row.name: row.digest for row in conn.execute(query)}


def registry(engine: Engine) -> list[dict[str, Any]]:
    """Every version with its tasks, in two queries (tasks streamed in dataset order)."""
    with engine.connect() as conn:
        versions = _dicts(conn.execute(select(m.datasets).order_by(m.datasets.c.id)))
        tasks_by: dict[int, list[dict[str, Any]]] = {v["id"]: [] for v in versions}
        query = select(m.tasks.c.dataset_id, m.tasks.c.name, m.tasks.c.digest).order_by(
            m.tasks.c.dataset_id, m.tasks.c.name)
        for row in conn.execute(query):
            tasks_by[row.dataset_id].append({"name": row.name, "digest": row.digest})
    for version in versions:
        version["tasks"] = tasks_by[version["id"]]
    return versions


def add_run(engine: Engine, *, dataset_id: int | None, label: str | None, job_name: str, user_id: int,
            bundle_key: str, n_trials: int, entries: list[dict[str, Any]]) -> int:
    with engine.begin() as conn:
        run_id = conn.execute(insert(m.runs).values(
            dataset_id=dataset_id, label=label, job_name=job_name, pusher_id=user_id, pushed_at=now(),
            bundle_key=bundle_key, n_trials=n_trials)).inserted_primary_key[0]
        if entries:
            conn.execute(insert(m.leaderboard), [{**e, "run_id": run_id, "dataset_id": dataset_id} for e in entries])
    return run_id


def run(engine: Engine, run_id: int) -> dict[str, Any] | None:
    with engine.connect() as conn:
        row = conn.execute(select(m.runs, m.users.c.name.label("pusher"))
                           .join(m.users, m.users.c.id == m.runs.c.pusher_id).where(m.runs.c.id == run_id)).first()
        if row is None:
            return None
        out = dict(row._mapping)
        out["entries"] = _dicts(conn.execute(select(m.leaderboard).where(m.leaderboard.c.run_id == run_id)))
    return out


def leaderboard_page(engine: Engine, dataset_id: int, page: int, per_page: int) -> Page:
    """Entries best first (score, then solve rate), each with its run's label and push time."""
    lb, runs = m.leaderboard, m.runs
    query = (select(lb, runs.c.label, runs.c.job_name, runs.c.pushed_at)
             .join(runs, runs.c.id == lb.c.run_id).where(lb.c.dataset_id == dataset_id)
             .order_by(lb.c.score.desc().nulls_last(), lb.c.solve_rate.desc().nulls_last(), lb.c.id)
             .limit(per_page).offset((page - 1) * per_page))
    with engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(lb).where(lb.c.dataset_id == dataset_id)).scalar_one()
        return Page(_dicts(conn.execute(query)), page, per_page, total)


def controls(engine: Engine, dataset_id: int) -> list[dict[str, Any]]:
    """The newest pushed entry of each control (``oracle``, then ``empty``) of a version, with its run;
    ``control_deviations`` decoded (the tasks the oracle did not solve, or the empty agent did)."""
    lb, runs = m.leaderboard, m.runs
    query = (select(lb, runs.c.label, runs.c.job_name, runs.c.pushed_at)
             .join(runs, runs.c.id == lb.c.run_id)
             .where(lb.c.dataset_id == dataset_id, lb.c.control.is_not(None))
             .order_by(runs.c.pushed_at.desc(), lb.c.id.desc()))
    newest: dict[str, dict[str, Any]] = {}
    with engine.connect() as conn:
        for row in _dicts(conn.execute(query)):
            newest.setdefault(row["control"], row)
    out = [newest[k] for k in ("oracle", "empty") if k in newest]
    for row in out:
        row["control_deviations"] = json.loads(row["control_deviations"] or "[]")
    return out


def add_capture(engine: Engine, *, digest: str, user_id: int, blob_key: str, size: int) -> bool:
    """Record a received trajectory capture; False when that digest is already there."""
    try:
        with engine.begin() as conn:
            conn.execute(insert(m.trajectories).values(digest=digest, user_id=user_id, status="received",
                                                       blob_key=blob_key, size=size, received_at=now()))
    except IntegrityError:
        return False
    return True


def set_capture_status(engine: Engine, digest: str, status: str, reason: str | None,
                       manifest: dict[str, Any] | None) -> None:
    values: dict[str, Any] = {"status": status, "reason": reason}
    if manifest is not None:
        values["manifest"] = json.dumps(manifest, sort_keys=True)
    if status == "verified":
        values["verified_at"] = now()
    with engine.begin() as conn:
        conn.execute(update(m.trajectories).where(m.trajectories.c.digest == digest).values(**values))


def capture(engine: Engine, digest: str) -> dict[str, Any] | None:
    query = select(m.trajectories.c.digest, m.trajectories.c.status, m.trajectories.c.reason,
                   m.trajectories.c.size, m.trajectories.c.received_at, m.trajectories.c.verified_at,
                   m.trajectories.c.blob_key).where(m.trajectories.c.digest == digest)
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return dict(row._mapping) if row else None


def pending_captures(engine: Engine) -> list[tuple[str, str]]:
    """(digest, blob key) of every capture still ``received``."""
    query = select(m.trajectories.c.digest, m.trajectories.c.blob_key).where(m.trajectories.c.status == "received")
    with engine.connect() as conn:
        return [(row.digest, row.blob_key) for row in conn.execute(query)]
