"""The tasks ``bench skills eval`` generates: one per case of ``evals/evals.json``.

Each is a task folder in the split layout (``task.toml``, ``instruction.md`` holding the case prompt
verbatim, ``environment/Dockerfile``, ``tests/test.sh``). The case's ``files`` are copied into
the workspace (``/app``). The verifier runs each check in ``/app``, prints ``PASS``/``FAIL`` with
its description, and writes the fraction passed as the reward (1.0: the case passed); a case of
sentences only is judged instead (``--judge-model``, :mod:`.eval_judge`). The skill
itself is staged beside them (``skills/<name>/``, without ``evals/``: the expectations are the
answers) for ``--skills-dir``; nothing of the skill is in the tasks, so a baseline run cannot see it.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

from benchflow.util import atomic

from .discover import SKIP_DIRS
from .eval_judge import RUBRIC_PATH, JudgeRoute, rubric, verifier_toml
from .evals_file import Check, EvalCase, EvalSet

VERIFIER_TIMEOUT_SEC = 300


def folder_name(skill_name: str) -> str:
    """The skill's folder name in the agent's skills folder (a safe single path segment)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", skill_name).strip(".-") or "skill"


def _shell(check: Check) -> str:
    args = {k: shlex.quote(v) for k, v in check.args.items()}
    if check.type == "file_exists":
        return f"test -e {args['path']}"
    if check.type == "file_contains":
        return f"grep -qF -- {args['text']} {args['path']}"
    if check.type == "file_matches":
        return f"grep -qE -- {args['pattern']} {args['path']}"
    return check.args["run"]


def verifier_script(case: EvalCase) -> str:
    lines = ["#!/bin/sh", f"# bench skills eval: the checks of case {case.id}", "mkdir -p /logs/verifier",
             "cd /app 2>/dev/null || true", "passed=0",
             ('check() { if (sh -c "$2") >/dev/null 2>&1; then passed=$((passed + 1)); echo "PASS $1"; '
              'else echo "FAIL $1"; fi; }')]
    for check in case.checks:
        lines.append(f"check {shlex.quote(check.description)} {shlex.quote(_shell(check))}")
    lines.append(f"awk -v p=\"$passed\" 'BEGIN {{ printf \"%.6g\\n\", p / {len(case.checks)} }}' "
                 "> /logs/verifier/reward.txt")
    return "\n".join(lines) + "\n"


def _dockerfile(evals: EvalSet, case: EvalCase) -> str:
    if evals.dockerfile is not None:
        text = evals.dockerfile.read_text(encoding="utf-8")
    else:
        text = f"FROM {evals.image}\nWORKDIR /app\n"
    if case.files:
        text += "COPY files/ /app/\n"
    return text


def _task_toml(evals: EvalSet, case: EvalCase, judge: JudgeRoute | None) -> str:
    text = (f'version = "1.0"\n\n[metadata]\ncategory = "skill-eval"\n'
            f'tags = ["skill-eval", {_toml_str(evals.skill_name)}]\n\n'
            f"[agent]\ntimeout_sec = {float(evals.timeout_sec)}\n\n"
            f"[verifier]\ntimeout_sec = {float(VERIFIER_TIMEOUT_SEC)}\n")
    return text + verifier_toml(case, judge) if evals.judged(case) else text


def _toml_str(value: str) -> str:
    import json

    return json.dumps(value)  # a JSON string is a valid TOML basic string


def write_tasks(evals: EvalSet, root: Path, judge: JudgeRoute | None = None) -> Path:
    """Write one task per case under ``root`` (a judged case's verifier asks ``judge``, which the set's
    ``judge_model`` needs); returns ``root``."""
    for case in evals.cases:
        task = root / case.task_name
        (task / "environment").mkdir(parents=True)
        (task / "tests").mkdir()
        (task / "task.toml").write_text(_task_toml(evals, case, judge))
        (task / "instruction.md").write_text(case.prompt.rstrip("\n") + "\n")
        (task / "environment" / "Dockerfile").write_text(_dockerfile(evals, case))
        for rel in case.files:
            target = task / "environment" / "files" / Path(rel).name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(evals.skill_dir / rel, target)
        if evals.judged(case):
            atomic.write_text(task / RUBRIC_PATH, rubric(case))
            continue
        test = task / "tests" / "test.sh"
        test.write_text(verifier_script(case))
        test.chmod(0o755)
    return root


def stage_skill(evals: EvalSet, root: Path) -> Path:
    """A skills root holding only this skill (its ``evals/``, caches and links left out) for ``--skills-dir``."""
    target = root / folder_name(evals.skill_name)

    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        skipped = {n for n in names if n in SKIP_DIRS or (here / n).is_symlink()}
        if here.resolve() == evals.skill_dir.resolve():
            skipped.add("evals")
        return skipped

    shutil.copytree(evals.skill_dir, target, ignore=ignore)
    return root
