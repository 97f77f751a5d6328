"""What a backend reports it has: the sandboxes it made that still exist (``bench sandbox list``) and what it
keeps between runs (``bench cache``). :class:`.base.Backend` returns these; the commands print them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class OwnedSandbox:
    """One sandbox BenchFlow made that still exists (a row of ``bench sandbox list``)."""

    id: str
    name: str
    sandbox: str
    """The backend it belongs to (its registered name)."""
    engine: str
    """Where it lives: ``docker`` (the local engine), a remote engine's URL, ``local``, or what
    another backend names its place."""
    state: str
    image: str
    created: float
    job: str | None
    trial: str | None
    task: str | None
    owner: str
    """``live pid N``, ``gone (pid N)``, ``none`` or ``other host H``."""
    owner_alive: bool | None
    """True: its owning process runs; False: it is gone (an orphan); None: unknown (no recorded
    owner, or one on another host), so its age governs it."""
    kept: bool
    account_owner: str | None = None
    """The account-level owner it was made under (Daytona's ``BENCHFLOW_DAYTONA_OWNER``), when it has one."""
    foreign: bool = False
    """Not made by BenchFlow: listed by ``bench sandbox list --all`` only, never removed by cleanup."""

    def to_json(self) -> dict:
        import time
        from dataclasses import asdict

        data = asdict(self)
        data["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created))
        return data


@dataclass
class CacheEntry:
    """One thing a backend keeps between runs (a row of ``bench cache list``)."""

    kind: str
    id: str
    ref: str
    size_bytes: int
    created: str
    engine: str
    """Where it lives (see :attr:`OwnedSandbox.engine`)."""
    in_use_by: list[str] = field(default_factory=list)
    """What uses it right now (containers, live sandboxes, a build); such an entry is never removed."""

    def to_json(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


class CacheStore(Protocol):
    """What a backend keeps between runs (images, layers, build cache), for ``bench cache``."""

    place: str
    """Where the cache lives; backends sharing one place (two backends on one engine) share one
    store, and it is listed once."""
    kinds: tuple[str, ...]
    """The kinds of entry it has (``images``, ``build-cache``, …)."""

    def entries(self, kinds: tuple[str, ...], older_than_sec: float | None = None) -> list[CacheEntry]:
        """The entries of ``kinds`` (created longer ago than ``older_than_sec``), oldest first.

        Raises:
            SandboxUnavailable: the place cannot be looked at (an engine that does not answer).
        """

    def remove(self, entry: CacheEntry) -> None:
        """Delete one entry, checking again that nothing took it up since.

        Raises:
            Exception: it must stay; the message says why (e.g. "used by …").
        """
