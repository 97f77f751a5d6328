"""``--format branch-tree``: rows per branch child, once branch records exist.

Branching (``bench branch``) records ``<trial>/tree.json``; until a job folder
holds one there is nothing to write, and the conversion says so in one line.
This version does not read branch records yet, so a folder that has them is
refused too, with its own reason, rather than converted from a guessed shape.
"""

from __future__ import annotations

from pathlib import Path

from benchflow.errors import UserError

from .source import trial_folders


def refuse_without_branches(source: Path) -> None:
    """Raise UserError: no branch records under ``source``, or records this version cannot read yet."""
    found = next((trial.root / "tree.json" for trial, _, _ in trial_folders(source)
                  if (trial.root / "tree.json").is_file()), None)
    if found is None:
        raise UserError(f"--format branch-tree: no branch records under {source} (no <trial>/tree.json; "
                        "they are written by bench branch)")
    raise UserError(f"--format branch-tree: {found} is a branch record this BenchFlow cannot convert yet; "
                    "use --format prime-sft or trl-sft for its trials")
