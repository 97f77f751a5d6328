"""One trial runner (docs/ARCHITECTURE.md): every trial's sandbox is brought up by ``jobs/trial.py``
``run_trial``; a branched trial, the checkpoints of ``bench run`` and the engine's own modes plug into it
as modes. Checked over src/benchflow's ast: a second runner would have to run the environment phase."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "benchflow"
TRIAL_START = {"environment_phase", "setup_failure"}
"""What brings a trial's sandbox up from its task, and records it when it did not come up."""


def _uses(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    return names & TRIAL_START


def test_only_the_one_runner_brings_a_trial_up():
    users = {str(path.relative_to(SRC)) for path in sorted(SRC.rglob("*.py")) if _uses(path)}
    assert users == {"jobs/trial.py"}


def test_a_branched_trial_is_a_mode_of_the_one_runner():
    from benchflow.branch.mode import BranchMode
    from benchflow.jobs.extensions import TrialMode

    members = [name for name in TrialMode.__annotations__] + \
        [name for name in vars(TrialMode) if not name.startswith("_")]
    assert all(hasattr(BranchMode, name) for name in members), members
    # the children and the continued parent verify themselves, each agent behind a network of its own
    assert (BranchMode.verifier_runs, BranchMode.opens_network) == (False, True)
    assert "run_trial" in {alias.name for node in ast.walk(ast.parse((SRC / "branch/run.py").read_text()))
                           if isinstance(node, ast.ImportFrom) and node.module == "benchflow.jobs.trial"
                           for alias in node.names}
