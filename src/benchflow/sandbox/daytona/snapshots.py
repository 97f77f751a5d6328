"""Daytona snapshots of a sandbox's filesystem (``POST /sandbox/{id}/snapshot``), and the ones a killed run left.

A snapshot is a Daytona snapshot any sandbox can start from, so ``restore``
starts a new sandbox from it and deletes the old one. Daytona snapshots carry
no labels, so the owner is in the name: ``bf-snap-[<BENCHFLOW_DAYTONA_OWNER>--]<host>-<pid>-<pid start>-<random>``
(:func:`parse`); one whose process is gone is stale (``bench sandbox cleanup``
removes it) unless it was retained (its random part starts with ``r``; ``bench
cache -s daytona`` lists and cleans those). With an owner set, only that owner's
are seen. The job is not in the name (a job is a path), so the reap of one job's
leftovers does not find them; ``stop()`` deletes its own snapshots.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass

from .. import docker_engine as eng
from ..remote_common import first_line

PREFIX = "bf-snap-"
OWNER_SEP = "--"
"""Between the owner and the host in a name (neither has a ``-``: :func:`_plain` makes it ``_``)."""

RETAINED = "r"
"""First letter of the random part of a retained snapshot's name: it is never stale."""


def _plain(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "." else "_" for ch in text)[:40]


def owner_part() -> str | None:
    """``BENCHFLOW_DAYTONA_OWNER`` as it is written in a snapshot name; None when it is not set."""
    from .backend import owner

    name = owner()
    return _plain(name) if name else None


def snapshot_name(*, retain: bool = False) -> str:
    """A new snapshot name naming this process (and its owner scope) as its owner (``retain``: kept past it)."""
    pid = os.getpid()
    scope = f"{part}{OWNER_SEP}" if (part := owner_part()) else ""
    tail = (RETAINED if retain else "") + secrets.token_hex(4)
    return f"{PREFIX}{scope}{_plain(socket.gethostname())}-{pid}-{eng.process_start_ticks(pid) or 0}-{tail}"


@dataclass(frozen=True)
class Parsed:
    """What a snapshot name made here says."""

    owner: str | None
    host: str
    pid: str
    start: str
    retained: bool

    def labels(self) -> dict[str, str]:
        """Its owner labels (:mod:`.docker_engine`)."""
        return {eng.HOST: self.host, eng.PID: self.pid, eng.PID_START: "" if self.start == "0" else self.start}


def parse(name: str) -> Parsed | None:
    """What the name of a snapshot made here says; None for one not made here."""
    if not name.startswith(PREFIX):
        return None
    parts = name[len(PREFIX):].rsplit("-", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return None
    scope, pid, start, tail = parts
    owner, _, host = scope.rpartition(OWNER_SEP)
    return Parsed(owner=owner or None, host=host, pid=pid, start=start, retained=tail.startswith(RETAINED))


def in_scope(parsed: Parsed | None) -> bool:
    """Whether a snapshot (parsed name) is BenchFlow's and of this owner scope (every owner's without one)."""
    part = owner_part()
    return parsed is not None and (part is None or parsed.owner == part)


def this_host() -> str:
    """This host as a snapshot name writes it."""
    return _plain(socket.gethostname())


def _api(client):
    """The SDK's generated snapshots REST client on the session of ``client`` (a ``daytona.Daytona``)."""
    from daytona_api_client import SnapshotsApi

    return SnapshotsApi(client._api_client)


def ours(client) -> list:
    """This owner scope's snapshots made here (the SDK's ``SnapshotDto``s), every page."""
    api, items, page = _api(client), [], 1
    while True:
        found = api.get_all_snapshots(name=PREFIX, page=page, limit=100)
        items.extend(item for item in found.items if in_scope(parse(item.name)))
        if page >= (found.total_pages or 1):
            return items
        page += 1


def owner_gone(parsed: Parsed) -> bool | None:
    """Whether the process that made a snapshot is gone: True/False on this host, None on another."""
    if parsed.host != this_host():
        return None
    alive = eng.owner_alive(parsed.labels() | {eng.HOST: socket.gethostname()})
    return None if alive is None else not alive


def stale(client) -> list[str]:
    """Names of this owner scope's snapshots, not retained, whose owning process on this host is gone."""
    return [item.name for item in ours(client)
            if not (parsed := parse(item.name)).retained and owner_gone(parsed) is True]


def remove(client, names: list[str]) -> dict[str, str]:
    """Delete these snapshots; name -> why for each that stayed (one already gone counts as removed)."""
    from daytona_api_client.exceptions import NotFoundException

    api, stayed = _api(client), {}
    for name in names:
        try:
            api.remove_snapshot(api.get_snapshot(name).id)
        except NotFoundException:
            continue
        except Exception as exc:  # noqa: BLE001
            stayed[name] = first_line(exc)
    return stayed
