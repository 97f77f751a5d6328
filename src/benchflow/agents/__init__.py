"""Agents: the controls (oracle, nop) and registry agents driven over ACP."""

from __future__ import annotations

from .base import Agent, AgentContext, AgentOutcome


def resolve(spec: str | None, harness: str = "acp") -> Agent:
    """The agent for ``-a``: ``oracle`` (default), ``nop``, a registry name, or a ``.toml`` path.

    ``harness="native"`` runs a registry agent through its own headless CLI (its
    ``native`` section) instead of its ACP adapter; the controls ignore it.

    Raises:
        ConfigError: unknown agent (the message lists the known ones), or no native mode.
    """
    from .controls import CONTROLS

    name = spec or "oracle"
    if name in CONTROLS:
        return CONTROLS[name]()
    from . import registry

    if harness == "native":
        from .native import resolve_native

        return resolve_native(name)
    return registry.resolve_agent(name)


__all__ = ["Agent", "AgentContext", "AgentOutcome", "resolve"]
