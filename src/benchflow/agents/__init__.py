"""Agents: the controls (oracle, nop) and registry agents driven over ACP."""

from __future__ import annotations

from .base import Agent, AgentContext, AgentOutcome


def resolve(spec: str | None) -> Agent:
    """The agent for ``-a``: ``oracle`` (default), ``nop``, a registry name, or a ``.toml`` path.

    Raises:
        ConfigError: unknown agent; the message lists the known ones.
    """
    from .controls import CONTROLS

    name = spec or "oracle"
    if name in CONTROLS:
        return CONTROLS[name]()
    from . import registry

    return registry.resolve_agent(name)


__all__ = ["Agent", "AgentContext", "AgentOutcome", "resolve"]
