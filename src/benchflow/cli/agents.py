"""``bench agents [NAME]``, ``bench agent list``, ``bench agent show NAME``.

Reads the agent registry and renders it; credentials are reported by name and
source only, never by value. Output that is not a terminal is laid out at its
natural width, so a pipe (``bench agents | grep claude``) sees every identifier
whole; ``--json`` prints the same facts as JSON, and ``--format reference``
prints one entry in the reference's registry schema (contracts §5.1).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from benchflow.cli.console import stdout_console

agents_cmd = typer.Typer()
agent_list_cmd = typer.Typer()
agent_show_cmd = typer.Typer()

_CONTROLS = "Controls: oracle (the task's reference solution), nop (does nothing)."
_FORMATS = ("benchflow", "reference")

JSON_OPTION = typer.Option(False, "--json", help="Print JSON instead of a table.")
FORMAT_OPTION = typer.Option("benchflow", "--format", metavar="benchflow|reference",
                             help="Schema of the printed entry: benchflow (this version's) or reference "
                                  "(the reference's registry keys: install_cmd, launch_cmd, env_mapping, ...).")


def _credentials_cell(config: Any, found: list[Any]) -> str:
    if found:
        return ", ".join(f"{c.name} ({c.source})" for c in found)
    if not config.api_key_env:
        return "none needed (the gateway's provider keys)"
    return f"missing: {' or '.join(config.api_key_env)}"


def _summary(config: Any, found: list[Any]) -> dict[str, Any]:
    return {"name": config.name, "aliases": list(config.aliases), "description": config.description,
            "protocol": config.protocol, "install": {"kind": config.install.kind,
                                                     "packages": list(config.install.packages)},
            "available": not config.unavailable_reason, "unavailable_reason": config.unavailable_reason or None,
            "credentials_needed": list(config.api_key_env),
            "credentials_found": [{"name": c.name, "source": c.source} for c in found]}


def _print_table(as_json: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from benchflow.agents.registry import find_credentials, list_agents

    configs = [(c, find_credentials(c)) for c in list_agents()]
    if as_json:
        print(json.dumps([_summary(c, found) for c, found in configs], indent=2))
        return
    table = Table(title="Agents", title_justify="left")
    for column in ("Name", "Aliases", "Protocol", "Install", "Credentials", "Status"):
        table.add_column(column, overflow="fold")
    for config, found in configs:
        install = ", ".join(config.install.packages) or config.install.kind
        table.add_row(escape(config.name), escape(", ".join(config.aliases)), config.protocol, escape(install),
                      escape(_credentials_cell(config, found)), "unavailable" if config.unavailable_reason else "ready")
    console = stdout_console()
    console.print(table)
    for config, _ in configs:
        if config.unavailable_reason:
            console.print(f"{escape(config.name)} is unavailable: {escape(config.unavailable_reason)}")
    console.print(_CONTROLS)
    console.print("Details: bench agents NAME")


def _print_detail(name: str, as_json: bool, fmt: str) -> None:
    from benchflow.agents.registry import find_credentials, get_agent_config
    from benchflow.errors import ConfigError

    if fmt not in _FORMATS:
        raise ConfigError(f"--format {fmt}: unknown; use {' or '.join(_FORMATS)}")
    config = get_agent_config(name)
    if fmt == "reference":
        from benchflow.agents.reference_schema import to_reference

        entry = to_reference(config)
        if as_json:
            print(json.dumps(entry, indent=2))
        else:
            import tomli_w

            sys.stdout.write(tomli_w.dumps(entry, multiline_strings=True))
        return
    found = find_credentials(config)
    if as_json:
        doc = config.model_dump(mode="json")
        doc["credentials_found"] = [{"name": c.name, "source": c.source} for c in found]
        print(json.dumps(doc, indent=2))
        return
    _print_grid(config, found)


def _print_grid(config: Any, found: list[Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from benchflow.agents.registry import user_agents_dir

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")

    def row(label: str, value: str) -> None:
        grid.add_row(label, escape(value))

    install = config.install
    row("name", config.name)
    row("description", config.description or "-")
    row("aliases", ", ".join(config.aliases) or "-")
    if config.unavailable_reason:
        row("unavailable", config.unavailable_reason)
    row("protocol", config.protocol)
    row("install", f"{install.kind}: {', '.join(install.packages) or '(script)'}"
                   f"{' → ' + ', '.join('/opt/benchflow/bin/' + b for b in install.bins) if install.bins else ''}"
                   f" (as root, timeout {install.timeout_sec:g}s)")
    if install.script.strip():
        row("install script", install.script.strip())
    row("launch", config.launch)
    gw = config.gateway
    mapping = [f"url → {', '.join(gw.base_url_env) or '-'}", f"key → {', '.join(gw.api_key_env) or '-'}"]
    if gw.model_env:
        mapping.append(f"model → {', '.join(gw.model_env)}")
    row("gateway", f"{gw.api}; " + "; ".join(mapping))
    row("model", f"{config.model.default or '(none: --model required)'}; format {config.model.format}; "
                 f"set via {config.model.via}")
    effort = config.effort
    row("effort", "not supported" if effort.via == "none"
        else f"{', '.join(effort.values)} via {effort.via}{' ' + effort.env if effort.env else ''}")
    row("credentials needed", " or ".join(config.api_key_env) or "none")
    if config.subscription:
        row("subscription login", ", ".join(config.subscription.host_files))
    for spec in config.credential_files:
        row("credential file", f"{spec.path} from {spec.env_source}")
    if config.reference is not None:
        kept = {k: v for k, v in config.reference.model_dump().items() if v and v != "acp"}
        row("kept, not used here", "; ".join(f"{k} = {v}" for k, v in kept.items()) or "-")
    row("credentials found", ", ".join(f"{c.name} ({c.source})" for c in found) or "none")
    row("user registry", str(user_agents_dir()))
    stdout_console().print(grid)


@agents_cmd.command(help="List the agents, or show one in detail.")
def agents(name: str = typer.Argument(None, metavar="[NAME]", help="Show this agent in detail"),
           as_json: bool = JSON_OPTION, fmt: str = FORMAT_OPTION) -> None:
    if name:
        _print_detail(name, as_json, fmt)
    else:
        _print_table(as_json)


@agent_list_cmd.command(help="List all registered agents.")
def agent_list(as_json: bool = JSON_OPTION) -> None:
    _print_table(as_json)


@agent_show_cmd.command(help="Show details for a registered agent.")
def agent_show(name: str = typer.Argument(..., help="Agent name"), as_json: bool = JSON_OPTION,
               fmt: str = FORMAT_OPTION) -> None:
    _print_detail(name, as_json, fmt)
