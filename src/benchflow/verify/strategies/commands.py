"""In-sandbox verifier strategies: ``test.sh``, ``script`` and ``reward-kit`` as shell commands.

Each becomes one ``sh -c`` script run from the verifier folder with its output
in ``/logs/verifier/test-stdout.txt`` (the wedge probe of the runner reads it),
plus the files root makes executable first and the extra environment.
``reward-kit`` also gets its manifest written before it runs, and, when it
declares ``criteria``, a strict check afterwards: ``reward.json`` must hold
exactly those metrics, and the reward is their aggregate (contracts §2.5).
"""

from __future__ import annotations

import posixpath
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchflow.verify.rewards import RewardError, aggregate

from .context import fail, inside

STDOUT = "/logs/verifier/test-stdout.txt"
MANIFEST = "/logs/verifier/reward-kit-manifest.json"


@dataclass
class Command:
    """What the runner executes for one in-sandbox strategy."""

    script: str
    """``sh -c`` text; ``$0`` is the verifier folder in the sandbox."""
    executables: list[str] = field(default_factory=list)
    """Sandbox paths root makes executable (and readable) before the run."""
    env: dict[str, str] = field(default_factory=dict)
    manifest: dict[str, Any] | None = None
    criteria: dict[str, float] | None = None
    """reward-kit criteria -> weights: the strict check after the run."""


def test_script(remote_dir: str) -> Command:
    return Command(script=f'exec "$0/test.sh" > {STDOUT} 2>&1', executables=[f"{remote_dir}/test.sh"])


def script(remote_dir: str, command: str) -> Command:
    """``cd /verifier && <command>``; a first token with a ``/`` is made executable first."""
    first = shlex.split(command)[0]
    executables = [posixpath.normpath(f"{remote_dir}/{first}")] if "/" in first else []
    return Command(script=f'cd "$0" || exit 1\n{command} > {STDOUT} 2>&1', executables=executables)


def reward_kit(remote_dir: str, task: Any, name: str, strategy: Any, outputs: Any) -> Command:
    root = (strategy.root or "").strip("/") or "."
    entry = posixpath.normpath(f"{root}/{strategy.entrypoint}")
    env = {"BENCHFLOW_VERIFIER_DIR": remote_dir,
           "BENCHFLOW_REWARD_KIT_ROOT": posixpath.normpath(f"{remote_dir}/{root}"),
           "BENCHFLOW_REWARD_TEXT": outputs.reward_text, "BENCHFLOW_REWARD_JSON": outputs.reward_json,
           "BENCHFLOW_REWARD_DETAILS_JSON": outputs.details_json or "/logs/verifier/reward-details.json",
           "BENCHFLOW_REWARD_KIT_MANIFEST": MANIFEST}
    criteria = None
    if strategy.criteria:
        rel = posixpath.normpath(f"{root}/{strategy.criteria}")
        criteria = load_criteria(inside(task.paths.verifier_dir, rel, f"strategy '{name}' criteria"))
        env["BENCHFLOW_REWARD_KIT_CRITERIA"] = f"{remote_dir}/{rel}"
    manifest = {"strategy": name, "type": "reward-kit", "root": root, "entrypoint": strategy.entrypoint,
                "criteria": sorted(criteria) if criteria else None, "outputs": outputs.model_dump()}
    py = 'p=$(command -v python3 || command -v python) || { echo "reward-kit: no python in the sandbox"; exit 127; }'
    return Command(script=f'cd "$0" || exit 1\n{{ {py}; exec "$p" {shlex.quote(entry)}; }} > {STDOUT} 2>&1',
                   env=env, manifest=manifest, criteria=criteria)


def load_criteria(path: Path) -> dict[str, float]:
    """Criteria name -> weight from a JSON/YAML/TOML file: a list of names, a name -> weight
    map, or ``{"criteria": [...]}`` (names or ``{name, weight}`` objects).

    Raises:
        VerifierError: missing or unreadable.
    """
    if not path.is_file():
        raise fail(f"reward-kit criteria file {path.name} is missing")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise fail(f"reward-kit criteria {path.name} does not parse ({exc})") from None
    if isinstance(data, dict) and "criteria" in data:
        data = data["criteria"]
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            weight = value.get("weight", 1.0) if isinstance(value, dict) else value
            out[str(key)] = float(weight if isinstance(weight, (int, float)) else 1.0)
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, dict) and item.get("name"):
                out[str(item["name"])] = float(item.get("weight", 1.0))
            elif isinstance(item, str):
                out[item] = 1.0
    if not out:
        raise fail(f"reward-kit criteria {path.name} names no criterion")
    return out


def strict_criteria(verifier_dir: Path, rewards: dict[str, Any], criteria: dict[str, float],
                    policy: dict[str, Any]) -> dict[str, Any]:
    """The reward of a reward-kit run with declared criteria: computed from its metrics, which
    must be exactly the criteria; a reward it wrote itself must agree.

    Raises:
        RewardError: no reward.json metrics, other metrics than the criteria, or a reward that differs.
    """
    if not (verifier_dir / "reward.json").is_file():
        raise RewardError("reward-kit declares criteria, so it must write reward.json metrics "
                          "(reward.txt alone is not enough)")
    method = policy.get("method") or (rewards.get("aggregate") or {}).get("method") or "weighted_mean"
    computed = aggregate(rewards, {"method": method, "criteria": list(criteria), "weights": criteria})
    if "reward" in rewards and abs(rewards["reward"] - computed) > 1e-9:
        raise RewardError(f"reward.json reward {rewards['reward']} differs from its criteria's "
                          f"{method} {computed}")
    return {**rewards, "reward": computed, "aggregate": {"method": method, "criteria": list(criteria),
                                                         "weights": criteria}}
