"""``bench agents [NAME]``, ``bench agent list``, ``bench agent show NAME``.

Reads the agent registry and renders it; credentials are reported by name and
source only, never by value.
"""

from __future__ import annotations

from typing import Any

import typer

agents_cmd = typer.Typer()
agent_list_cmd = typer.Typer()
agent_show_cmd = typer.Typer()

_CONTROLS = "Controls: oracle (the task's reference solution), nop (does nothing)."


def _credentials_cell(config: Any, found: list[Any]) -> str:
    if found:
        return ", ".join(f"{c.name} ({c.source})" for c in found)
    needed = " or ".join(config.api_key_env) or "none"
    return f"missing: {needed}"


def _print_table() -> None:
    from rich.console import Console
    from rich.table import Table

    from benchflow.agents.registry import find_credentials, list_agents

    table = Table(title="Agents", title_justify="left")
    for column in ("Name", "Aliases", "Protocol", "Install", "Credentials"):
        table.add_column(column, overflow="fold")
    for config in list_agents():
        install = ", ".join(config.install.packages) or config.install.kind
        table.add_row(config.name, ", ".join(config.aliases), config.protocol, install,
                      _credentials_cell(config, find_credentials(config)))
    console = Console(highlight=False)
    console.print(table)
    console.print(_CONTROLS)
    console.print("Details: bench agents NAME")


def _print_detail(name: str) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from benchflow.agents.registry import (
        find_credentials,
        get_agent_config,
        user_agents_dir,
    )

    config = get_agent_config(name)
    found = find_credentials(config)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")

    def row(label: str, value: str) -> None:
        grid.add_row(label, escape(value))

    install = config.install
    row("name", config.name)
    row("description", config.description or "-")
    row("aliases", ", ".join(config.aliases) or "-")
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
    row("credentials found", ", ".join(f"{c.name} ({c.source})" for c in found) or "none")
    row("user registry", str(user_agents_dir()))
    Console(highlight=False).print(grid)


@agents_cmd.command(help="List the agents, or show one in detail.")
def agents(name: str = typer.Argument(None, metavar="[NAME]", help="Show this agent in detail")) -> None:
    if name:
        _print_detail(name)
    else:
        _print_table()


@agent_list_cmd.command(help="List all registered agents.")
def agent_list() -> None:
    _print_table()


@agent_show_cmd.command(help="Show details for a registered agent.")
def agent_show(name: str = typer.Argument(..., help="Agent name")) -> None:
    _print_detail(name)
