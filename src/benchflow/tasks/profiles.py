"""Authoring profiles and shorthands, expanded on every parse (contracts §1.6).

A profile is a block of defaults (data below). Profiles are deep-merged in the
order given, then the author's own keys are merged on top, so the author wins.
"""

from __future__ import annotations

import copy
from typing import Any

from benchflow.errors import TaskError

from .validation import did_you_mean

PROFILES: dict[str, dict[str, Any]] = {
    # A repository change graded by tests: long agent budget, no network, a big box.
    "code-change": {
        "agent": {"timeout_sec": 7200.0, "network_mode": "no-network"},
        "verifier": {"timeout_sec": 1200.0, "user": "root"},
        "sandbox": {"docker_image": "ubuntu:24.04", "network_mode": "no-network",
                    "cpus": 4, "memory_mb": 8192, "workdir": "/repo"},
        "benchflow": {"prompt": {"composition": "append"}},
    },
    # Stays exportable to the task.toml split layout without losses.
    "harbor-compatible": {
        "verifier": {"type": "test-script", "timeout_sec": 600.0, "service": "main"},
        "sandbox": {"network_mode": "public", "cpus": 1, "memory_mb": 2048, "storage_mb": 10240},
        "benchflow": {"compatibility": {"targets": ["task-toml"]}},
    },
    # Graded by a reward-kit program under verifier/.
    "reward-kit": {
        "verifier": {"timeout_sec": 900.0},
        "benchflow": {"verifier": {"path": "verifier/", "spec": "verifier/verifier.md"}},
    },
    # Ships live acceptance cases that `bench tasks check --level acceptance-live` runs.
    "acceptance-live": {
        "verifier": {"timeout_sec": 600.0},
        "benchflow": {"evidence": {"acceptance_live": {"cases": []}}},
    },
    # Several roles taking turns; prompts are composed base, role, scene, turn.
    "multi-agent": {
        "agent": {"timeout_sec": 3600.0},
        "benchflow": {"prompt": {"composition": "append", "order": ["base", "role", "scene", "turn"]},
                      "teams": {"default": {"handoff": {"mode": "sequential",
                                                        "workspace_visibility": "shared",
                                                        "trajectory_visibility": "metadata"}}}},
    },
    # Comparable local leaderboard runs: fixed budgets, no network.
    "leaderboard-local": {
        "agent": {"timeout_sec": 3600.0, "network_mode": "no-network"},
        "verifier": {"timeout_sec": 600.0},
        "sandbox": {"network_mode": "no-network", "cpus": 2, "memory_mb": 4096},
    },
}


def deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``top``; nested mappings merge, everything else is replaced."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _profile_names(data: dict[str, Any], source: str) -> list[str]:
    names: list[str] = []
    for key in ("profile", "profiles"):
        value = data.get(key)
        if value is None:
            continue
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            raise TaskError(f"{source}: '{key}' must be a profile name or a list of names")
        for name in items:
            if name not in PROFILES:
                raise TaskError(f"{source}: unknown profile '{name}'{did_you_mean(name, PROFILES)}; "
                                f"use one of: {', '.join(PROFILES)}")
            if name not in names:
                names.append(name)
    return names


def _relative_dir(value: str, key: str, source: str) -> str:
    parts = value.replace("\\", "/").split("/")
    if value.startswith("/") or ".." in parts or not value.strip():
        raise TaskError(f"{source}: '{key}: {value}' must be a folder inside the task "
                        "(relative, without '..'), e.g. 'verifier/'")
    return value if value.endswith("/") else value + "/"


def _block(data: dict[str, Any], path: tuple[str, ...], source: str) -> dict[str, Any]:
    """The mapping at ``path`` inside ``data``, created when absent."""
    node = data
    for depth, key in enumerate(path):
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise TaskError(f"{source}: '{'.'.join(path[:depth + 1])}' must be a mapping of settings")
    return node


def normalize_frontmatter(frontmatter: dict[str, Any], source: str = "task.md") -> dict[str, Any]:
    """Expand profiles and shorthands into canonical keys; the input is not modified.

    Raises:
        TaskError: an unknown profile or a shorthand path outside the task.
    """
    data = copy.deepcopy(frontmatter)
    if "benchflow" in data and not isinstance(data["benchflow"], dict):
        raise TaskError(f"{source}: 'benchflow' must be a mapping of settings")
    profiles = _profile_names(data, source)
    data.pop("profile", None)
    data.pop("profiles", None)

    # String shorthands first, so a profile's verifier/oracle settings still merge under them.
    if isinstance(data.get("verifier"), str):
        path = _relative_dir(data.pop("verifier"), "verifier", source)
        target = _block(data, ("benchflow", "verifier"), source)
        target.setdefault("path", path)
        target.setdefault("spec", path + "verifier.md")
        target.setdefault("entrypoint", path + "test.sh")
    if isinstance(data.get("oracle"), str):
        path = _relative_dir(data.pop("oracle"), "oracle", source)
        _block(data, ("benchflow", "oracle"), source).setdefault("path", path)

    if profiles:
        merged: dict[str, Any] = {}
        for name in profiles:
            merged = deep_merge(merged, PROFILES[name])
        data = deep_merge(merged, data)
        _block(data, ("benchflow",), source)["authoring"] = {"profiles": profiles, "normalized": True}

    name = data.pop("name", None)
    if name is not None:
        task = data.get("task") if isinstance(data.get("task"), dict) else None
        if task is None or "name" not in task:
            full = str(name) if "/" in str(name) else f"benchflow/{name}"
            data["task"] = {"name": full, **(task or {})}

    image = data.pop("image", None)
    if image is not None:
        sandbox = data.setdefault("sandbox", {})
        if isinstance(sandbox, dict):
            sandbox.setdefault("docker_image", image)
    return data
