"""``bench hub list|show|inspect|check``: browse a dataset registry (a file, a URL or a BenchFlow Hub),
or Prime Intellect's hosted environments through the ``prime`` CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

list_cmd = typer.Typer(add_completion=False)
show_cmd = typer.Typer(add_completion=False)
inspect_cmd = typer.Typer(add_completion=False)
check_cmd = typer.Typer(add_completion=False)

REGISTRY_HELP = ("Registry JSON URL or local file (BenchFlow's or Harbor's format), a BenchFlow Hub as hub:<url>, "
                 "or harbor for Harbor's registry (default: BenchFlow's registry, then $BENCHFLOW_HUB_URL for an "
                 "org/name dataset)")
HUB_HELP = "A BenchFlow Hub to read org/name@version from (default: $BENCHFLOW_HUB_URL when set)"
PRIME_INSTALL = "the prime CLI is not installed: install it with 'uv tool install prime' (or 'pip install prime'), then 'prime login'"


def _prime(args: list[str]) -> None:
    """Run ``prime`` with ``args``, its output passed through; exit 2 with how to install it when missing."""
    from benchflow.errors import ConfigError

    if shutil.which("prime") is None:
        raise ConfigError(PRIME_INSTALL)
    raise typer.Exit(subprocess.run(["prime", *args]).returncode)


def _provider(value: str | None) -> str | None:
    from benchflow.errors import ConfigError

    if value not in (None, "benchflow", "primeintellect"):
        raise ConfigError(f"--provider {value!r}: give benchflow or primeintellect")
    return value


@list_cmd.command(help="List a hub's datasets or environments (benchflow or primeintellect).")
def list_datasets(
    provider: str = typer.Option("benchflow", "--provider", help="Hub to browse: 'benchflow' (BenchFlow's dataset registry) or 'primeintellect' (hosted envs; needs the prime CLI)"),
    owner: Optional[str] = typer.Option(None, "--owner", help="Owner/namespace filter (primeintellect)"),
    search: Optional[str] = typer.Option(None, "--search", help="Search query"),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Maximum results"),
    as_json: bool = typer.Option(False, "--json", help="Emit raw JSON"),
    registry: Optional[str] = typer.Option(None, "--registry", help=REGISTRY_HELP),
    hub: Optional[str] = typer.Option(None, "--hub", help="A BenchFlow Hub to list (the same as --registry hub:<url>)"),
) -> None:
    from benchflow.datasets.browse import list_versions, version_row
    from benchflow.datasets.registry_load import load_registry, registry_location

    if _provider(provider) == "primeintellect":
        _prime(["env", "list", *(["--owner", owner] if owner else []), *(["--search", search] if search else [])])
    loaded = load_registry(registry_location(registry, hub))
    found = list_versions(loaded, search, limit)
    if as_json:
        typer.echo(json.dumps([v.model_dump(mode="json", exclude_none=True) for v in found], indent=2))
        return
    rows = [version_row(v) for v in found]
    if not rows:
        typer.echo(f"no dataset in {loaded.location}" + (f" matching {search!r}" if search else ""))
        return
    width = max(len(f"{r['name']}@{r['version']}") for r in rows)
    for r in rows:
        ref = f"{r['name']}@{r['version']}"
        noun = "task " if r["n_tasks"] == 1 else "tasks"
        typer.echo(f"{ref.ljust(width)}  {r['n_tasks']:>5} {noun}  {r['description'] or ''}".rstrip())


@show_cmd.command(help="Show a dataset's tasks, or a hosted environment's metadata.")
def show(
    source_env: str = typer.Argument(..., metavar="SOURCE_ENV", help="A dataset on a BenchFlow Hub as org/name@version (read from --hub, or from $BENCHFLOW_HUB_URL), a dataset of BenchFlow's registry as name@version (e.g. terminal-bench@2.0), or a hosted environment (e.g. primeintellect/general-agent)"),
    version: Optional[str] = typer.Option(None, "--version", help="Version (of the dataset or hosted environment)"),
    provider: Optional[str] = typer.Option(None, "--provider", help="Where to read it without a Hub: 'benchflow' (BenchFlow's registry; lists the dataset's tasks) or 'primeintellect' (default: benchflow for name@version, primeintellect for owner/name)"),
    as_json: bool = typer.Option(False, "--json", help="Print the dataset's entry as JSON (for a Hub version, the version and its controls)"),
    hub: Optional[str] = typer.Option(None, "--hub", help="A BenchFlow Hub to read org/name@version from, with its control results (default: $BENCHFLOW_HUB_URL when set)"),
    registry: Optional[str] = typer.Option(None, "--registry", help=REGISTRY_HELP),
) -> None:
    from benchflow.datasets.browse import open_version
    from benchflow.datasets.registry import DatasetRef
    from benchflow.datasets.registry_load import registry_location

    chosen = _provider(provider)
    hosted = "/" in source_env and "@" not in source_env and not (hub or registry)  # owner/name: a hosted env
    if chosen == "primeintellect" or (chosen is None and hosted):
        _prime(["env", "info", source_env + (f"@{version}" if version else "")])
    if "/" in source_env and "@" not in source_env and version is None:
        from benchflow.errors import ConfigError

        raise ConfigError(f"{source_env}: give org/name@version for a dataset on a BenchFlow Hub")
    loaded, entry = open_version(source_env, version, registry, hub)
    location = registry_location(registry, hub, DatasetRef(entry.name, entry.version))
    controls = None
    if location.startswith("hub:"):
        from benchflow.hub import controls as hub_controls

        controls = hub_controls.fetch(location[len("hub:"):].rstrip("/"), entry.name, entry.version)
    if as_json:
        body = entry.model_dump(mode="json", exclude_none=True)
        typer.echo(json.dumps(body if controls is None else {**body, "controls": controls}, indent=2))
        return
    first = entry.tasks[0] if entry.tasks else None
    where = (f"{first.git_url}@{(first.git_commit_id or '')[:12]}" if first is not None and first.git_url
             else "archives" if first is not None else "no tasks")
    typer.echo(f"{entry.ref}: {len(entry.tasks)} tasks ({where}) from {loaded.location}")
    if entry.bench_version:
        typer.echo(f"bench version: {entry.bench_version}")
    width = max((len(t.name) for t in entry.tasks), default=0)
    for task in sorted(entry.tasks, key=lambda t: t.name):
        typer.echo(f"{task.name.ljust(width)}  {task.digest or _unpinned(task)}")
    if controls is not None:
        from benchflow.hub import controls as hub_controls

        for line in hub_controls.lines(controls, len(entry.tasks)):
            typer.echo(line)


def _unpinned(task: object) -> str:
    """What a Harbor entry (no digest) pins instead: its commit, or nothing (the repository's HEAD)."""
    commit = getattr(task, "git_commit_id", None)
    return f"no digest (commit {commit})" if getattr(task, "pinned", False) else f"not pinned ({commit or 'HEAD'})"


@inspect_cmd.command(help="Inspect a file from a hub environment package.\n\n"
                          "For a hosted environment (owner/name, Prime Intellect's Environments Hub at "
                          "$PRIME_API_BASE_URL, else Prime's), --path is a file of its package's wheel (README.md: "
                          "the description the package carries). For a registry dataset (name@version), --path is "
                          "TASK/FILE inside one of its tasks (fetched into the cache and digest-checked first).")
def inspect(
    source_env: str = typer.Argument(..., metavar="SOURCE_ENV", help="A dataset as name@version (or org/name@version on a Hub), or a hosted environment (e.g. primeintellect/general-agent)"),
    version: Optional[str] = typer.Option(None, "--version", help="Version (of the dataset or hosted environment)"),
    path: str = typer.Option("README.md", "--path", help="File inside the hosted environment package (TASK/FILE for a dataset)"),
    registry: Optional[str] = typer.Option(None, "--registry", help=REGISTRY_HELP),
    hub: Optional[str] = typer.Option(None, "--hub", help=HUB_HELP),
) -> None:
    import sys

    from benchflow.datasets.browse import open_version, read_task_file
    from benchflow.errors import ConfigError

    if "/" in source_env and "@" not in source_env and not (hub or registry):  # owner/name: a hosted env
        from benchflow.hosted import prime_hub
        from benchflow.hosted.ref import parse_ref

        ref = parse_ref(source_env, version)
        found = prime_hub.details(ref)
        sys.stdout.buffer.write(prime_hub.wheel_file(ref, prime_hub.download_wheel(ref, found), path))
        sys.stdout.flush()
        return
    if "@" not in source_env and version is None:
        raise ConfigError(f"{source_env}: give name@version (e.g. skillsbench@1.1)")
    loaded, entry = open_version(source_env, version, registry, hub)
    _file, data = read_task_file(loaded, entry, path)
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


class CheckLevel(str, Enum):
    inventory = "inventory"
    check = "check"


@check_cmd.command(help="Inventory or structurally check representative registry tasks.\n\n"
                        "inventory lists the tasks chosen (spread over each dataset version by name) and their "
                        "pins; check also fetches each, verifies its digest and runs bench tasks check "
                        "(structural). Exit 1 when a task fails.")
def check(
    registry: Optional[str] = typer.Option(None, "--registry", help="Registry JSON URL or local file (default: BenchFlow's registry)."),
    tasks_per_dataset: int = typer.Option(2, "--tasks-per-dataset", min=1, help="Number of representative tasks to select per registry dataset."),
    level: CheckLevel = typer.Option(CheckLevel.inventory, "--level", help="Compatibility level to run: inventory or check."),
    out: Optional[Path] = typer.Option(None, "--out", help="Optional JSONL output path."),
    cache_dir: Path = typer.Option(Path(".cache/hub/registry"), "--cache-dir", help="Cache directory for sparse clones."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Optional cap on selected task refs."),
) -> None:
    from benchflow.datasets.browse import check_rows
    from benchflow.datasets.registry_load import load_registry, registry_location
    from benchflow.util import atomic

    loaded = load_registry(registry_location(registry, None))
    rows = check_rows(loaded, per_dataset=tasks_per_dataset, level=level.value, limit=limit,
                      cache_dir=cache_dir.expanduser().resolve())
    if out is not None:
        atomic.write_jsonl(out, rows)
    for row in rows:
        mark = "ok  " if row["ok"] else "FAIL"
        pin = (row["git_commit_id"] or "HEAD")[:12] if row["git_url"] else "archive"
        line = f"{mark}  {row['dataset']}@{row['version']}  {row['task']}  {pin}  {row['digest'] or 'no digest'}"
        typer.echo(line + (f"  {'; '.join(row['issues'])}" if row.get("issues") else ""))
    failed = sum(not r["ok"] for r in rows)
    typer.echo(f"{len(rows)} tasks at level {level.value}: {len(rows) - failed} ok, {failed} with issues"
               + (f"; rows written to {out}" if out else ""))
    if failed:
        raise typer.Exit(1)
