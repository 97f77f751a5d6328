"""What a task's scenes declare that every sandbox can check before a run: handoff, prompt composition.

Read from the task document alone (``benchflow.teams.<scene>.handoff``, ``benchflow.prompt``), so
that ``tasks.capability`` checks a task without importing the run engine; ``scenes.plan`` and
``scenes.runner`` run what is declared here.
"""

from __future__ import annotations

from typing import Any

PARTS = ("base", "role", "scene", "turn")
HANDOFF_DEFAULTS = {"mode": "sequential", "workspace_visibility": "shared", "trajectory_visibility": "none"}
_HANDOFF_ALLOWED = {"mode": ("sequential",), "workspace_visibility": ("shared",),
                    "trajectory_visibility": ("none", "metadata")}


def handoff(task: Any, scene: str) -> dict[str, str]:
    """The scene's handoff: ``benchflow.teams.<scene>``, else the only team declared, else the defaults."""
    teams = (task.document.get("benchflow") or {}).get("teams") or {}
    team = teams.get(scene) if isinstance(teams, dict) else None
    if team is None and isinstance(teams, dict) and len(teams) == 1:
        team = next(iter(teams.values()))
    declared = (team or {}).get("handoff") if isinstance(team, dict) else None
    return {**HANDOFF_DEFAULTS, **(declared if isinstance(declared, dict) else {})}


def composition(task: Any) -> tuple[str, list[str]]:
    prompt = (task.document.get("benchflow") or {}).get("prompt") or {}
    prompt = prompt if isinstance(prompt, dict) else {}
    return str(prompt.get("composition") or "replace"), list(prompt.get("order") or PARTS)


def scene_issues(task: Any) -> list[str]:
    """What in the task's scenes no sandbox of this build runs (an unknown handoff or composition)."""
    if not task.scenes:
        return []
    issues = []
    if task.config.steps:
        issues.append("scenes: a multi-step task runs its steps, not scenes; drop one of the two")
    for scene in task.scenes:
        for key, value in handoff(task, scene["name"]).items():
            allowed = _HANDOFF_ALLOWED.get(key)
            if allowed is not None and value not in allowed:
                issues.append(f"benchflow.teams.{scene['name']}.handoff.{key} {value!r}: this build runs "
                              f"{' or '.join(allowed)} only")
    mode, order = composition(task)
    if mode not in ("append", "replace"):
        issues.append(f"benchflow.prompt.composition {mode!r}: use append or replace")
    if any(part not in PARTS for part in order):
        issues.append(f"benchflow.prompt.order {order!r}: name only {', '.join(PARTS)}")
    for name, role in task.roles.items():
        agent = str(role.get("agent") or "")
        if is_file(agent):
            issues.append(f"agents.roles.{name}.agent {agent!r}: name a registry agent, not a file")
    return issues


def is_file(agent: str) -> bool:
    return "/" in agent or agent.endswith(".toml") or agent.startswith(".")
