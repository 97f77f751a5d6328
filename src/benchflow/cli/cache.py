"""``bench cache list|clean``: the images and build cache BenchFlow made (Docker engines, ``local``).

Both commands parse the shared flags, call :mod:`benchflow.sandbox.docker_cache`
and print a table (or ``--json`` on stdout, notes on stderr).
"""

from __future__ import annotations

import json
from typing import List, Optional

import typer

list_cmd = typer.Typer(add_completion=False)
clean_cmd = typer.Typer(add_completion=False)

ONLY_HELP = ("Only these kinds: images, build-cache, pulled-images (comma-separated or repeated; "
             "default: images and build-cache)")
SANDBOX_HELP = ("docker, remote-docker or local (default: docker when an engine answers, remote-docker when "
                "BENCHFLOW_REMOTE_DOCKER_HOST is set, and local)")
OLDER_HELP = ("Only what was created longer ago than this (e.g. 30d, 12h); the age is the creation time, "
              "not the last use")


def _kinds(only: list[str] | None) -> tuple[str, ...]:
    from benchflow.errors import ConfigError
    from benchflow.sandbox.docker_cache import DEFAULT_KINDS, KINDS

    chosen = [part.strip() for value in only or [] for part in value.split(",") if part.strip()]
    for kind in chosen:
        if kind not in KINDS:
            raise ConfigError(f"--only {kind}: unknown kind; use {', '.join(KINDS)}")
    return tuple(chosen) or DEFAULT_KINDS


def _engines(sandbox: list[str] | None) -> list[str | None]:
    """The targets to look at; without ``--sandbox``, a local engine that does not answer is
    skipped with a note (a machine without Docker still lists its local cache)."""
    from benchflow.errors import ConfigError
    from benchflow.sandbox import docker_engine as eng
    from benchflow.sandbox.docker_cache import LOCAL

    if not sandbox:
        remote = eng.remote_url()
        answers, why = eng.ping(None)
        if not answers:
            typer.echo(f"note: skipped Docker: {why}", err=True)
        return ([None] if answers else []) + ([remote] if remote else []) + [LOCAL]
    urls: list[str | None] = []
    for name in sandbox:
        if name == "docker":
            urls.append(None)
        elif name == "remote-docker":
            remote = eng.remote_url()
            if remote is None:
                raise ConfigError(f"--sandbox remote-docker: set {eng.REMOTE_ENV} to the engine URL")
            urls.append(remote)
        elif name == "local":
            urls.append(LOCAL)
        else:
            raise ConfigError(f"--sandbox {name}: bench cache supports docker, remote-docker and local here")
    return urls


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
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("KIND", "SANDBOX", "IMAGE", "ID", "SIZE", "CREATED", *extra):
        table.add_column(column.upper(), overflow="fold")
    for row in rows:
        cells = [row["kind"], row["engine"], row["ref"], row["id"].split(":")[-1][:12],
                 _size(row["size_bytes"]), row["created"].replace("T", " ")[:16]]
        cells += [str(row.get(key, "")) for key in extra]
        table.add_row(*cells)
    Console(highlight=False, soft_wrap=True).print(table)


@list_cmd.command(help="List what BenchFlow keeps, with sizes and creation times (the default).")
def list_(
    only: Optional[List[str]] = typer.Option(None, "--only", help=ONLY_HELP),
    sandbox: Optional[List[str]] = typer.Option(None, "--sandbox", "-s", help=SANDBOX_HELP),
    older_than: Optional[str] = typer.Option(None, "--older-than", help=OLDER_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON on stdout; notes go to stderr"),
) -> None:
    from benchflow.sandbox.docker_cache import list_cache

    kinds, age = _kinds(only), _older(older_than)
    rows = [entry.to_json() for url in _engines(sandbox)
            for entry in list_cache(url, kinds=kinds, older_than_sec=age)]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("BenchFlow keeps nothing of these kinds: " + ", ".join(kinds))
        return
    _table(rows)
    typer.echo(f"{len(rows)} entries, {_size(sum(r['size_bytes'] for r in rows))}", err=True)


@clean_cmd.command(help="Print what would be removed; remove it with --remove.")
def clean(
    only: Optional[List[str]] = typer.Option(None, "--only", help=ONLY_HELP),
    sandbox: Optional[List[str]] = typer.Option(None, "--sandbox", "-s", help=SANDBOX_HELP),
    older_than: Optional[str] = typer.Option(None, "--older-than", help=OLDER_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON on stdout; notes go to stderr"),
    remove: bool = typer.Option(False, "--remove", help="Remove what is listed; without it, nothing is removed"),
) -> None:
    from benchflow.sandbox.docker_cache import clean_cache

    report = clean_cache(_engines(sandbox), kinds=_kinds(only), older_than_sec=_older(older_than),
                         remove=remove)
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
