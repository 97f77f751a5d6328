"""A dataset version's control results on a hub (``bench hub show``): the newest pushed oracle run and
empty (nop) run, each with the tasks that went against it.

A correct task scores 1 under the oracle and 0 under the empty agent (contracts §2.7), so an oracle
that leaves a task unsolved, or an empty agent that solves one, points at the task.
"""

from __future__ import annotations

from typing import Any

from .client import HubClient

NAMES = {"oracle": "oracle", "empty": "empty (nop)"}


def fetch(url: str, name: str, version: str) -> list[dict[str, Any]]:
    """The version's control entries (``GET /api/datasets/{org}/{name}/{version}/controls``).

    Raises:
        UserError: the hub cannot be reached, or refuses (HubRefused).
    """
    with HubClient(url) as client:
        return client.get_json(f"/api/datasets/{name}/{version}/controls")["controls"]


def lines(controls: list[dict[str, Any]], n_tasks: int) -> list[str]:
    """What ``bench hub show`` prints about the controls."""
    if not controls:
        return ["controls: none pushed (push an oracle run and a nop run of this version with bench hub push)"]
    out = ["controls:"]
    for entry in controls:
        rate = entry["solve_rate"]
        shown = "n/a" if rate is None else f"{rate:.3f}"
        run = f"run {entry['run_id']}" + (f" ({entry['label']})" if entry.get("label") else "")
        out.append(f"  {NAMES[entry['control']]}: solve rate {shown} over {entry['tasks']}/{n_tasks} tasks, "
                   f"{run}, pushed {entry['pushed_at']}")
        against = entry["control_deviations"]
        if against:
            what = "not solved by the oracle" if entry["control"] == "oracle" else "solved doing nothing"
            out.append(f"    {what}: {', '.join(against)}")
    return out
