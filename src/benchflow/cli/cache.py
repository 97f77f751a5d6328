"""``bench cache list|clean``: the images and build cache BenchFlow made, on every sandbox backend
that keeps any (Docker engines, ``local``, and those of installed packages).

Both commands parse the shared flags, call :mod:`benchflow.sandbox.caches`
and print a table (or ``--json`` on stdout, notes on stderr).
"""

from __future__ import annotations

import json
from typing import Annotated, List, Optional

import typer

list_cmd = typer.Typer(add_completion=False)
clean_cmd = typer.Typer(add_completion=False)

ONLY_HELP = ("Only these kinds: images, build-cache, pulled-images (comma-separated or repeated; "
             "default: images and build-cache)")
SANDBOX_HELP = ("docker, remote-docker, local, daytona or another installed backend (default: every backend that "
                "answers: docker when an engine answers, remote-docker when BENCHFLOW_REMOTE_DOCKER_HOST "
                "is set, daytona when DAYTONA_API_KEY is set, and local); daytona lists this "
                "BENCHFLOW_DAYTONA_OWNER's snapshots (kind images)")
OLDER_HELP = ("Only what was created longer ago than this (e.g. 30d, 12h); the age is the creation time, "
              "not the last use")

Only = Annotated[Optional[List[str]], typer.Option("--only", help=ONLY_HELP)]
Sandboxes = Annotated[Optional[List[str]], typer.Option("--sandbox", "-s", help=SANDBOX_HELP)]
OlderThan = Annotated[Optional[str], typer.Option("--older-than", help=OLDER_HELP)]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON on stdout; notes go to stderr")]
"""The flags ``list`` and ``clean`` share."""


def _backends(sandbox: list[str] | None) -> list:
    from benchflow.sandbox import get_backend, names

    return [get_backend(name) for name in sandbox or names()]


def _kinds(only: list[str] | None, backends: list) -> tuple[str, ...]:
    from benchflow.errors import ConfigError
    from benchflow.sandbox.caches import DEFAULT_KINDS, kinds

    known = kinds(backends)
    chosen = [part.strip() for value in only or [] for part in value.split(",") if part.strip()]
    for kind in chosen:
        if kind not in known:
            raise ConfigError(f"--only {kind}: unknown kind; use {', '.join(known)}")
    return tuple(chosen) or DEFAULT_KINDS


def _stores(sandbox: list[str] | None, backends: list) -> tuple[list, list[str]]:
    """(the cache stores to look at, errors to report after the rest). One that does not answer is
    a note, or an error when named with ``--sandbox`` or configured, so a machine without Docker
    still lists its local cache."""
    from benchflow.errors import ConfigError
    from benchflow.sandbox.caches import stores

    found = stores(backends, asked=bool(sandbox))
    for note in found.notes:
        typer.echo(f"note: {note}", err=True)
    if sandbox and not found.stores and not found.errors:
        raise ConfigError("; ".join(f"--sandbox {backend.name}: {backend.no_cache_reason}"
                                    for backend in backends if backend.cache is None))
    return found.stores, found.errors


def _selection(only: list[str] | None, sandbox: list[str] | None,
               older_than: str | None) -> tuple[list, tuple[str, ...], float | None, list[str]]:
    """What the shared flags choose: (the cache stores, the kinds, the minimum age in seconds, errors to
    report after the rest)."""
    backends = _backends(sandbox)
    kinds, age = _kinds(only, backends), _older(older_than)
    stores, errors = _stores(sandbox, backends)
    return stores, kinds, age, errors


def _errors(errors: list[str]) -> None:
    for error in errors:
        typer.echo(f"error: {error}", err=True)
    if errors:
        raise typer.Exit(1)


def _older(text: str | None) -> float | None:
    from benchflow.errors import ConfigError
    from benchflow.util.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ConfigError(f"--older-than: {exc}") from None


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _table(rows: list[dict], extra: tuple[str, ...] = ()) -> None:
    from rich.table import Table

    from benchflow.cli.console import stdout_console

    table = Table(box=None, pad_edge=False)
    for column in ("KIND", "SANDBOX", "IMAGE", "ID", "SIZE", "CREATED", *extra):
        table.add_column(column.upper(), overflow="fold")
    for row in rows:
        cells = [row["kind"], row["engine"], row["ref"], row["id"].split(":")[-1][:12],
                 _size(row["size_bytes"]), row["created"].replace("T", " ")[:16]]
        cells += [str(row.get(key, "")) for key in extra]
        table.add_row(*cells)
    stdout_console().print(table)


@list_cmd.command(help="List what BenchFlow keeps, with sizes and creation times (the default).")
def list_(
    only: Only = None,
    sandbox: Sandboxes = None,
    older_than: OlderThan = None,
    as_json: AsJson = False,
) -> None:
    from benchflow.sandbox.caches import list_cache

    stores, kinds, age, errors = _selection(only, sandbox, older_than)
    rows = [entry.to_json() for entry in list_cache(stores, kinds=kinds, older_than_sec=age)]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    elif not rows:
        typer.echo("BenchFlow keeps nothing of these kinds: " + ", ".join(kinds))
    else:
        _table(rows)
        typer.echo(f"{len(rows)} entries, {_size(sum(r['size_bytes'] for r in rows))}", err=True)
    _errors(errors)


@clean_cmd.command(help="Print what would be removed; remove it with --remove.")
def clean(
    only: Only = None,
    sandbox: Sandboxes = None,
    older_than: OlderThan = None,
    as_json: AsJson = False,
    remove: bool = typer.Option(False, "--remove", help="Remove what is listed; without it, nothing is removed"),
) -> None:
    from benchflow.sandbox.caches import clean_cache

    stores, kinds, age, errors = _selection(only, sandbox, older_than)
    report = clean_cache(stores, kinds=kinds, older_than_sec=age, remove=remove)
    if as_json:
        typer.echo(json.dumps({"removed_bytes": report.removed_bytes, "entries": report.entries}, indent=2))
    elif not report.entries:
        typer.echo("Nothing to clean.")
    else:
        _table(report.entries, extra=("action", "reason"))
    if not remove and any(e["action"] == "would remove" for e in report.entries):
        typer.echo("Nothing was removed; add --remove to remove what is marked 'would remove'.", err=True)
    elif remove:
        typer.echo(f"Freed {_size(report.removed_bytes)}.", err=True)
    _errors(errors)
