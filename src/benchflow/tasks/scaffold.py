"""Scaffold a new task folder in the native ``task.md`` layout (``bench new``).

The scaffold is complete but deliberately unfinished: every spot the author
must fill in carries a ``[REPLACE: …]`` marker, and ``bench check`` refuses a
task while any marker is left. Everything else about the scaffold already
passes the checks, so the markers are the author's to-do list.

The folder is built under a hidden temporary name beside the target and
renamed into place at the end, so an interrupted scaffold never leaves a
half-written task behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchflow.errors import UserError
from benchflow.util import atomic

FORMATS = ("task-md",)
"""Formats ``bench new`` writes; the legacy split layout is only reached through ``bench export``."""


@dataclass(frozen=True)
class ScaffoldResult:
    """What :func:`scaffold_task` created."""

    task_dir: Path
    files: list[str] = field(default_factory=list)
    """Paths of the files written, relative to ``task_dir``, sorted."""


def validate_task_name(name: str) -> None:
    """Refuse a name that is not a single, visible path segment.

    Raises:
        UserError: naming the problem and the fix.
    """
    fix = "pick a single folder name such as 'fix-login-bug'"
    if not name or not name.strip():
        raise UserError(f"task name is empty: {fix}")
    if "/" in name or "\\" in name:
        raise UserError(f"task name {name!r} contains a path separator: {fix} and put the parent in --dir")
    if name.startswith("."):
        raise UserError(f"task name {name!r} starts with a dot: {fix}")
    if any(ch.isspace() for ch in name):
        raise UserError(f"task name {name!r} contains whitespace: {fix} (use '-' instead)")
    if any(not ch.isprintable() for ch in name):
        raise UserError(f"task name {name!r} contains control characters: {fix}")


def scaffold_task(name: str, parent_dir: str | os.PathLike[str] = "tasks", *,
                  pytest: bool = True, oracle: bool = True, fmt: str = "task-md") -> ScaffoldResult:
    """Create ``<parent_dir>/<name>/`` with a task.md, environment, verifier and oracle.

    Args:
        name: the task folder name (one path segment).
        parent_dir: folder the task is created in; created when missing.
        pytest: add a pytest test file that ``verifier/test.sh`` runs.
        oracle: add ``oracle/solve.sh``.
        fmt: task format; only ``task-md``.

    Raises:
        UserError: bad name or format, or the target already exists.
    """
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r} is not supported: new tasks use 'task-md' "
                        "(write the legacy task.toml layout with 'bench export' instead)")
    validate_task_name(name)
    parent = Path(parent_dir)
    target = parent / name
    if target.exists() or target.is_symlink():
        raise UserError(f"{target}: already exists; choose another name or remove it first")
    if parent.exists() and not parent.is_dir():
        raise UserError(f"--dir {parent}: is not a directory; pass a folder to create the task in")
    files = _template_files(name, pytest=pytest, oracle=oracle)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".new", dir=parent))
    except OSError as exc:
        raise UserError(f"--dir {parent}: cannot create the task there ({exc.strerror}); "
                        "pick a folder you can write to") from None
    try:
        for rel, (text, executable) in files.items():
            path = atomic.write_text(staging / rel, text)
            if executable:
                path.chmod(0o755)
        (staging / "verifier" / "rubrics").mkdir(parents=True, exist_ok=True)
        staging.chmod(0o755)
        try:
            staging.rename(target)
        except OSError as exc:
            raise UserError(f"{target}: already exists; choose another name or remove it first") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ScaffoldResult(task_dir=target, files=sorted(files))


def _template_files(name: str, *, pytest: bool, oracle: bool) -> dict[str, tuple[str, bool]]:
    """relative path -> (text, executable)."""
    files: dict[str, tuple[str, bool]] = {
        "task.md": (_task_md(name), False),
        "environment/Dockerfile": (_dockerfile(pytest), False),
        "verifier/test.sh": (_TEST_SH_PYTEST if pytest else _TEST_SH_PLAIN, True),
        "verifier/verifier.md": (_VERIFIER_MD.replace("@NAME@", name), False),
        "verifier/rubrics/verifier.md": (_RUBRIC_MD.replace("@NAME@", name), False),
        "verifier/rubrics/verifier.toml": (_RUBRIC_TOML, False),
    }
    if pytest:
        files["verifier/test_outputs.py"] = (_TEST_OUTPUTS_PY, False)
    if oracle:
        files["oracle/solve.sh"] = (_SOLVE_SH, True)
    return files


def _task_md(name: str) -> str:
    from benchflow.tasks import render_task_md

    frontmatter = {
        "schema_version": "1.3",
        "metadata": {
            "author_name": "[REPLACE: your name]",
            "difficulty": "medium",
            "category": "[REPLACE: category, e.g. software-engineering]",
            "tags": [name],
        },
        "agent": {"timeout_sec": 300},
        "verifier": {"timeout_sec": 120},
        "sandbox": {"cpus": 1, "memory_mb": 2048},
    }
    body = (f"# {name}\n\n## prompt\n\n"
            "[REPLACE: tell the agent what to do, in the words a user would use. Name the files it must "
            "produce and where (the working directory is /app), and what counts as done.]\n")
    return render_task_md(frontmatter, body)


def _dockerfile(pytest: bool) -> str:
    lines = [
        "# The sandbox the agent works in. The verifier runs in the same container afterwards.",
        "FROM ubuntu:24.04",
        "",
    ]
    if pytest:
        lines += [
            "# verifier/test.sh runs pytest; install it here because the sandbox has no network.",
            "RUN apt-get update \\",
            "    && apt-get install -y --no-install-recommends python3 python3-pytest \\",
            "    && rm -rf /var/lib/apt/lists/*",
            "",
        ]
    lines += [
        "WORKDIR /app",
        "RUN mkdir -p /logs/verifier /logs/agent /logs/artifacts",
        "",
    ]
    return "\n".join(lines)


def _verifier_script(intro: str, solved: str, checks: str) -> str:
    """A scaffolded verifier/test.sh: ``intro`` (shebang, comments, setup), then reward 1 when the shell
    condition ``solved`` succeeds (else 0), written to reward.txt, reward.json and reward-details.json
    (whose ``checks`` says what was run)."""
    return (intro + f"\nif {solved}; then\n    reward=1\nelse\n    reward=0\nfi\n\n"
            + _WRITE_REWARD.replace("@CHECKS@", checks))


_WRITE_REWARD = """\
echo "$reward" > /logs/verifier/reward.txt
printf '{"reward": %s, "task_success": %s}\\n' "$reward" "$reward" > /logs/verifier/reward.json
printf '{"checks": "@CHECKS@", "passed": %s}\\n' "$reward" > /logs/verifier/reward-details.json
"""

_TEST_SH_PYTEST = _verifier_script("""\
#!/usr/bin/env bash
# Verifier entrypoint: runs as root in the sandbox after the agent has finished.
# It scores the work with the pytest checks in test_outputs.py and writes the
# score (1 = solved, 0 = not) to /logs/verifier/reward.txt and reward.json.
set -u
cd "$(dirname "$0")"
mkdir -p /logs/verifier
""", "python3 -m pytest -q -rA test_outputs.py", "pytest test_outputs.py")

_TEST_SH_PLAIN = _verifier_script("""\
#!/usr/bin/env bash
# Verifier entrypoint: runs as root in the sandbox after the agent has finished.
# It writes the score (1 = solved, 0 = not) to /logs/verifier/reward.txt and reward.json.
set -u
mkdir -p /logs/verifier

solved() {
    # [REPLACE: commands that succeed only when the task is solved, e.g. test -f /app/output.txt]
    false
}
""", "solved", "solved() in test.sh")

_TEST_OUTPUTS_PY = '''\
"""Checks of the agent's work; verifier/test.sh runs them with pytest after the agent finishes."""

from pathlib import Path

WORKDIR = Path("/app")


def test_task_solved() -> None:
    # [REPLACE: assert on the files or state the agent must leave behind]
    assert (WORKDIR / "output.txt").is_file(), "expected /app/output.txt"
'''

_SOLVE_SH = """\
#!/usr/bin/env bash
# Reference solution (the oracle): runs as root in the sandbox from the working directory.
# `bench run` without -a runs it; a correct task scores 1.0 with it.
set -euo pipefail

# [REPLACE: commands that solve the task, e.g. echo done > /app/output.txt]
"""

_VERIFIER_MD = """\
---
document_version: '0.3'
verifier:
  name: @NAME@
  default_strategy: tests
  strategies:
    tests:
      type: script
      command: ./test.sh
  rubric:
    combine: weighted_mean
    dimensions:
      task_success:
        weight: 1.0
        source: reward_json
    files: [rubrics/verifier.md, rubrics/verifier.toml]
  outputs:
    reward_text: /logs/verifier/reward.txt
    reward_json: /logs/verifier/reward.json
    details_json: /logs/verifier/reward-details.json
    aggregate_policy:
      field: reward
      method: weighted_mean
---

# Verifier for @NAME@

The `tests` strategy runs `./test.sh` from `/verifier` once the agent has
finished. The script writes `reward` (1 solved, 0 not) and the
`task_success` dimension to the reward files declared above.
"""

_RUBRIC_MD = """\
# Rubric: @NAME@

## task_success (weight 1.0)

1.0 when every check in `verifier/test.sh` passes, else 0.0.
"""

_RUBRIC_TOML = """\
# Machine-readable twin of rubrics/verifier.md.
[dimensions.task_success]
weight = 1.0
description = "Every check in verifier/test.sh passes."
"""
