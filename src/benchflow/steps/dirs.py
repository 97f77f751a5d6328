"""Where a multi-step task's steps keep their folders: ``steps/<name>/`` with its own ``oracle/`` or
``solution/`` and ``verifier/`` or ``tests/``.

Apart from :mod:`.runner` (which runs the steps) because planning asks whether the oracle can run a
task before any sandbox starts, and need not import what runs them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def step_dir(task: Any, step: Any) -> Path:
    return Path(task.path) / "steps" / step.name


def first_dir(folder: Path, *names: str) -> Path | None:
    return next((folder / n for n in names if (folder / n).is_dir()), None)


def has_oracle(task: Any) -> bool:
    """The oracle can run the task: its ``solve.sh``, or for a multi-step task one for every step."""
    if task.paths.solve_path.is_file():
        return True
    steps = task.config.steps or []
    return bool(steps) and all((first_dir(step_dir(task, s), "oracle", "solution") or Path("/nonexistent"))
                               .joinpath("solve.sh").is_file() for s in steps)
