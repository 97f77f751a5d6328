"""Finding and removing the sandboxes BenchFlow left behind (``bench sandbox list|cleanup``).

Two kinds of place are looked at, each named by a *target*: a Docker engine
(``None`` for the local engine, else its URL), where only containers labelled
``benchflow.owned=true`` count, and :data:`LOCAL`, the state folders of the
embedded ``local`` backend (:mod:`local_state`; a ``kill -9`` of their owner
leaves the folder, and a kill that lands as an exec starts can leave its
namespace running too, which removal sweeps). Which of them go, by default:

- an **orphan** (labels name an owning process on this host that is gone, or
  whose pid now belongs to another process): removed whatever its age or state;
- **no recorded owner** (made by ``bench sandbox create``, or by a process on
  another host of a shared remote engine): removed once older than ``max_age``;
- held by a **live** process, or **kept** with ``--keep-sandbox`` (renamed
  ``bf-kept-…``): never, unless named with ``--id`` (``--all`` takes kept ones
  and unowned ones of any age, never a live run's).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import docker_engine as eng

KEPT_PREFIX = "bf-kept-"
"""Name prefix of containers kept with --keep-sandbox: cleanup leaves them to ``release``."""


LOCAL = "local"
"""The target naming the ``local`` backend's state folders rather than a Docker engine."""


@dataclass
class OwnedContainer:
    """One sandbox we made: a container, or a local sandbox's state folder (``engine`` ``local``)."""

    id: str
    name: str
    engine: str
    """``docker`` (local engine), the remote engine URL, or ``local``."""
    state: str
    image: str
    created: float
    job: str | None
    trial: str | None
    task: str | None
    owner: str
    """``live pid N``, ``gone (pid N)``, ``none`` or ``other host H``."""
    owner_alive: bool | None
    kept: bool

    def to_json(self) -> dict:
        data = asdict(self)
        data["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created))
        return data


def list_owned(url: str | None = None) -> list[OwnedContainer]:
    """Every sandbox we made at target ``url``: containers with ``benchflow.owned=true``,
    or for :data:`LOCAL` every local sandbox state folder."""
    if url == LOCAL:
        return list_local()
    api = eng.client(url)
    rows = []
    for item in api.containers(all=True, filters={"label": f"{eng.OWNED}=true"}):
        labels = item.get("Labels") or {}
        name = (item.get("Names") or ["/?"])[0].lstrip("/")
        alive = eng.owner_alive(labels)
        pid = labels.get(eng.PID)
        if alive is True:
            owner = f"live pid {pid}"
        elif alive is False:
            owner = f"gone (pid {pid})"
        elif pid:
            owner = f"other host {labels.get(eng.HOST, '?')}"
        else:
            owner = "none"
        rows.append(OwnedContainer(
            id=item["Id"], name=name, engine=url or "docker", state=item.get("State", "?"),
            image=item.get("Image", "?"), created=eng.created_at(labels, float(item.get("Created", 0))) or 0.0,
            job=labels.get(eng.JOB), trial=labels.get(eng.TRIAL), task=labels.get(eng.TASK),
            owner=owner, owner_alive=alive, kept=name.startswith(KEPT_PREFIX)))
    return rows


def list_local() -> list[OwnedContainer]:
    """The ``local`` backend's sandboxes, one per state folder (``owner.json`` names the owner).

    A folder without a recorded pid (its ``owner.json`` unreadable) has no
    known owner, so its age governs it like an unowned container's.
    """
    from . import local_state

    rows = []
    for entry in local_state.list_sandboxes():
        path = Path(str(entry["path"]))
        pid = entry.get("pid")
        alive = bool(entry["alive"]) if isinstance(pid, int) else None
        owner = "none" if alive is None else (f"live pid {pid}" if alive else f"gone (pid {pid})")
        labels = entry.get("labels") if isinstance(entry.get("labels"), dict) else {}
        created = entry.get("created")
        if not isinstance(created, (int, float)):
            try:
                created = path.stat().st_mtime
            except OSError:
                created = 0.0
        key = entry.get("image")
        rows.append(OwnedContainer(
            id=path.name, name=path.name, engine=LOCAL, state="running" if alive else "stale",
            image=f"local:{key}" if key else "host", created=float(created),
            job=labels.get(eng.JOB), trial=labels.get(eng.TRIAL),
            task=labels.get(eng.TASK) or entry.get("name"), owner=owner, owner_alive=alive, kept=False))
    return rows


@dataclass
class CleanupReport:
    removed: list[dict] = field(default_factory=list)
    kept: list[dict] = field(default_factory=list)
    """Containers left alone, each with a ``reason``."""
    errors: list[str] = field(default_factory=list)
    dry_run: bool = False
    unmatched_ids: list[str] = field(default_factory=list)


def decide(row: OwnedContainer, *, max_age_sec: float, everything: bool, ids: list[str],
           now: float) -> tuple[bool, str]:
    """(remove?, why) for one container under the cleanup rules in the module docstring."""
    if any(row.id.startswith(i) or row.name == i for i in ids):
        return True, "named with --id"
    if ids:
        return False, "not named with --id"
    if row.owner_alive is True:
        return False, f"held by a live run ({row.owner})"
    if everything:
        return True, "--all"
    if row.kept:
        return False, "kept with --keep-sandbox (bench sandbox release TRIAL deletes it)"
    if row.owner_alive is False:
        return True, f"orphan: its owner is {row.owner}"
    age = now - row.created
    if age > max_age_sec:
        return True, f"no recorded owner and older than {max_age_sec / 60:g} min"
    return False, f"no recorded owner, {age / 60:.0f} min old (younger than --max-age)"


def cleanup(urls: list[str | None], *, max_age_sec: float, everything: bool = False,
            ids: list[str] | None = None, dry_run: bool = False) -> CleanupReport:
    """Remove what :func:`decide` says at each target; with ``dry_run`` only report it."""
    ids = list(ids or [])
    report = CleanupReport(dry_run=dry_run)
    now = time.time()
    seen: set[str] = set()
    for url in urls:
        for row in list_owned(url):
            remove, reason = decide(row, max_age_sec=max_age_sec, everything=everything, ids=ids, now=now)
            entry = row.to_json() | {"reason": reason}
            if not remove:
                report.kept.append(entry)
                continue
            seen.update(i for i in ids if row.id.startswith(i) or row.name == i)
            if not dry_run:
                try:
                    _remove(url, row)
                except Exception as exc:  # noqa: BLE001 - report and go on with the rest
                    report.errors.append(f"{row.name}: {exc}")
                    continue
            report.removed.append(entry)
    report.unmatched_ids = [i for i in ids if i not in seen]
    return report


def _remove(url: str | None, row: OwnedContainer) -> None:
    if url != LOCAL:
        eng.client(url).remove_container(row.id, force=True, v=True)
        return
    from . import local_state

    if not local_state.remove_sandbox(row.id) and (local_state.sandboxes_dir() / row.id).exists():
        raise OSError(f"could not remove {local_state.sandboxes_dir() / row.id}")


def engines() -> list[str | None]:
    """The local engine, plus the remote one when ``BENCHFLOW_REMOTE_DOCKER_HOST`` is set."""
    remote = eng.remote_url()
    return [None] + ([remote] if remote else [])


def targets() -> tuple[list[str | None], list[str], list[str]]:
    """Where ``bench sandbox list|cleanup`` look: (targets, notes, errors).

    Each Docker engine of :func:`engines` that answers, then :data:`LOCAL`. The
    local engine not answering is normal on a machine without Docker (a note);
    a configured remote engine not answering is an error, reported after the
    rest was listed or cleaned.
    """
    found: list[str | None] = []
    notes, errors = [], []
    for url in engines():
        answers, why = eng.ping(url)
        if answers:
            found.append(url)
        elif url is None:
            notes.append(f"skipped Docker: {why}")
        else:
            errors.append(f"remote Docker engine {url}: {why}")
    return found + [LOCAL], notes, errors


def remove_own(urls: list[str | None] | None = None) -> int:
    """Force-remove every container this process owns (not kept ones); for a SIGTERM/atexit
    handler of a run that cannot await its sandboxes' ``stop()``. Returns how many went."""
    import os

    pid, started = str(os.getpid()), eng.process_start_ticks(os.getpid()) or ""
    removed = 0
    for url in urls if urls is not None else engines():
        api = eng.client(url)
        mine = api.containers(all=True, filters={"label": [f"{eng.OWNED}=true", f"{eng.PID}={pid}",
                                                           f"{eng.PID_START}={started}"]})
        for item in mine:
            if (item.get("Names") or ["/"])[0].lstrip("/").startswith(KEPT_PREFIX):
                continue
            try:
                api.remove_container(item["Id"], force=True, v=True)
                removed += 1
            except Exception:  # noqa: BLE001 - best effort; cleanup catches the rest later
                pass
    return removed
