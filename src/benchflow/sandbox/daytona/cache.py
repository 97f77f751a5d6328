"""What BenchFlow keeps on Daytona (the ``cache`` of the ``daytona`` backend, ``bench cache -s daytona``).

One kind, ``images``: the Daytona snapshots BenchFlow made (``bf-snap-…``,
:mod:`.snapshots`) of this ``BENCHFLOW_DAYTONA_OWNER`` (every owner's when it
is not set): those ``bench branch --retain-snapshots`` and ``--checkpoints``
kept past their sandbox, and those of a run that is still going or was killed.
One stays, with the reason, while a sandbox on the account was started from it
or the run that made it still runs (or runs on another host, where it cannot
be told). Daytona's own build cache (what it built from a task's Dockerfile)
has no call to list or delete it and is not shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from benchflow.errors import SandboxUnavailable

from ..base import CacheEntry
from ..remote_common import first_line
from . import snapshots as snaps

GIB = 1 << 30


@dataclass
class DaytonaCache:
    """The snapshots BenchFlow keeps on the Daytona at ``url`` (``backend`` lists its sandboxes)."""

    backend: object
    url: str
    kinds: tuple[str, ...] = ("images",)

    @property
    def place(self) -> str:
        return f"daytona {self.url}"

    def entries(self, kinds: tuple[str, ...] = ("images",), older_than_sec: float | None = None) -> list[CacheEntry]:
        """This owner scope's snapshots, oldest first.

        Raises:
            SandboxUnavailable: no key, or Daytona does not answer.
        """
        from .backend import client

        try:
            items = snaps.ours(client())
        except SandboxUnavailable:
            raise
        except Exception as exc:
            raise SandboxUnavailable(f"Daytona snapshots cannot be listed: {first_line(exc)}") from exc
        if "images" not in kinds:
            return []
        users = self._users()
        cutoff = datetime.now(UTC).timestamp() - older_than_sec if older_than_sec else None
        found = []
        for item in items:
            created = _epoch(item.created_at)
            if cutoff is not None and created > cutoff:
                continue
            found.append(CacheEntry(kind="images", id=item.id, ref=item.name, size_bytes=int((item.size or 0) * GIB),
                                    created=_iso(created), engine=self.place,
                                    in_use_by=users.get(item.name, []) + _maker(snaps.parse(item.name))))
        return sorted(found, key=lambda entry: entry.created)

    def _users(self) -> dict[str, list[str]]:
        """Snapshot name -> the sandboxes on the account started from it."""
        users: dict[str, list[str]] = {}
        for row in self.backend.every_sandbox():
            if row.image.startswith(snaps.PREFIX):
                users.setdefault(row.image, []).append(f"sandbox {row.name} ({row.state})")
        return users

    def remove(self, entry: CacheEntry) -> None:
        """Delete the snapshot unless a sandbox was started from it since it was listed."""
        from .backend import client

        users = self._users().get(entry.ref)
        if users:
            raise RuntimeError("used by " + ", ".join(users))
        stayed = snaps.remove(client(), [entry.ref])
        if stayed:
            raise RuntimeError(stayed[entry.ref])


def _maker(parsed: snaps.Parsed) -> list[str]:
    """The run that made a snapshot, when it may still need it: one that runs, or one on another host
    unless the snapshot was retained (a retained one outlives its run on purpose)."""
    if parsed.retained:
        return []
    gone = snaps.owner_gone(parsed)
    if gone is None:
        return [f"a run on host {parsed.host} (pid {parsed.pid}; bench sandbox cleanup there removes it)"]
    return [] if gone else [f"the live run pid {parsed.pid}"]


def _epoch(value) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return 0.0


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
