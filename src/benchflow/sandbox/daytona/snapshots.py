"""Daytona snapshots of a sandbox's filesystem (``POST /sandbox/{id}/snapshot``), and the ones a killed run left.

A snapshot is a Daytona snapshot any sandbox can start from, so ``restore``
starts a new sandbox from it and deletes the old one. Daytona snapshots carry
no labels, so the owner is in the name: ``bf-snap-<host>-<pid>-<pid start>-<random>``;
one whose process is gone is stale (``bench sandbox cleanup`` removes it) unless
it was retained (its random part starts with ``r``). The
job is not in the name (a job is a path), so the reap of one job's leftovers
does not find them; ``stop()`` deletes its own snapshots.
"""

from __future__ import annotations

import os
import secrets
import socket

from .. import docker_engine as eng
from ..remote_common import first_line

PREFIX = "bf-snap-"


RETAINED = "r"
"""First letter of the random part of a retained snapshot's name: it is never stale."""


def snapshot_name(*, retain: bool = False) -> str:
    """A new snapshot name naming this process as its owner (and, ``retain``, kept past it)."""
    pid = os.getpid()
    host = "".join(ch if ch.isalnum() or ch in "." else "_" for ch in socket.gethostname())[:40]
    tail = (RETAINED if retain else "") + secrets.token_hex(4)
    return f"{PREFIX}{host}-{pid}-{eng.process_start_ticks(pid) or 0}-{tail}"


def owner_labels(name: str) -> dict[str, str] | None:
    """The owner labels (:mod:`.docker_engine`) a snapshot name carries; None for a name not made here."""
    if not name.startswith(PREFIX):
        return None
    parts = name[len(PREFIX):].rsplit("-", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return None
    host, pid, start, tail = parts
    if tail.startswith(RETAINED):
        return None  # retained: removed only on purpose (remove_snapshots)
    return {eng.HOST: host, eng.PID: pid, eng.PID_START: "" if start == "0" else start}


def _api(client):
    """The SDK's generated snapshots REST client on the session of ``client`` (a ``daytona.Daytona``)."""
    from daytona_api_client import SnapshotsApi

    return SnapshotsApi(client._api_client)


def stale(client) -> list[str]:
    """Names of this backend's snapshots whose owning process on this host is gone."""
    api, names, page = _api(client), [], 1
    host = "".join(ch if ch.isalnum() or ch in "." else "_" for ch in socket.gethostname())[:40]
    while True:
        found = api.get_all_snapshots(name=PREFIX, page=page, limit=100)
        for item in found.items:
            labels = owner_labels(item.name)
            if labels is not None and labels[eng.HOST] == host and \
                    eng.owner_alive(labels | {eng.HOST: socket.gethostname()}) is False:
                names.append(item.name)
        if page >= (found.total_pages or 1):
            return names
        page += 1


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
