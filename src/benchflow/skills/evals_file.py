"""A skill's ``evals/evals.json``: the test cases ``bench skills eval`` turns into tasks.

Accepted shapes (docs/skill-evals.md):

- Anthropic's skill-creator: ``{"skill_name", "evals": [{"id", "prompt", "expected_output",
  "files", "expectations"}]}``;
- BenchFlow 0.x: ``{"skill_name", "defaults", "cases": [{"id", "question", "ground_truth",
  "expected_behavior"}]}``;
- a bare list of cases.

``assertions`` is read as ``expectations``. An expectation is a check the generated verifier runs
in the sandbox (``{"type": "file_exists" | "file_contains" | "file_matches" | "command", ...}``)
or a plain sentence. Sentences need a judge model (``--judge-model``): with one, a case with no
check is scored by the judge over its sentences; without one, such a case is left out (named on
stderr), and a case with checks is scored by its checks alone. ``defaults.image`` and
``defaults.timeout_sec`` set the case image and agent timeout; ``evals/Dockerfile`` replaces the
generated one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError

DEFAULT_IMAGE = "python:3.12-slim"
DEFAULT_TIMEOUT_SEC = 600
CHECK_FIELDS = {"file_exists": ("path",), "file_contains": ("path", "text"), "file_matches": ("path", "pattern"),
                "command": ("run",)}


@dataclass(frozen=True)
class Check:
    """One machine-checkable expectation."""

    type: str
    args: dict[str, str]
    description: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self.args, "description": self.description}


@dataclass
class EvalCase:
    id: str
    prompt: str
    expected_output: str = ""
    files: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    """Expectations in plain words (judged by ``--judge-model`` when the case has no check)."""

    @property
    def task_name(self) -> str:
        return f"case-{self.id}"


@dataclass
class EvalSet:
    skill_name: str
    skill_dir: Path
    file: Path
    cases: list[EvalCase]
    """The cases that are run: those with a check, and with a judge model those with sentences only."""
    unscored: list[EvalCase]
    """Sentence-only cases left out (no judge model)."""
    image: str = DEFAULT_IMAGE
    timeout_sec: int = DEFAULT_TIMEOUT_SEC
    dockerfile: Path | None = None
    """``evals/Dockerfile`` when the skill ships one."""
    judge_model: str | None = None
    """The model that judges the sentence-only cases (``--judge-model``)."""

    def judged(self, case: EvalCase) -> bool:
        """True when ``case`` is scored by the judge model (it has sentences and no check)."""
        return self.judge_model is not None and not case.checks and bool(case.sentences)


def _fail(where: str, problem: str) -> ConfigError:
    return ConfigError(f"{where}: {problem}")


def _check(item: dict[str, Any], where: str) -> Check:
    kind = item.get("type")
    if kind not in CHECK_FIELDS:
        raise _fail(where, f"type {kind!r} is not one of {', '.join(CHECK_FIELDS)}; fix the expectation")
    args = {}
    for key in CHECK_FIELDS[kind]:
        value = item.get(key)
        if not isinstance(value, str) or not value:
            raise _fail(where, f"a {kind} check needs a non-empty string {key!r}")
        args[key] = value
    if kind == "file_matches":
        try:
            re.compile(args["pattern"])
        except re.error as exc:
            raise _fail(where, f"pattern {args['pattern']!r} is not a regular expression ({exc})") from None
    description = item.get("description") or f"{kind} " + " ".join(args.values())
    return Check(type=kind, args=args, description=str(description))


def _files(value: Any, where: str, skill_dir: Path) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(where, "files must be a list of paths relative to the skill folder")
    root = skill_dir.resolve()
    for rel in value:
        path = skill_dir / rel
        if path.is_symlink() or not path.resolve().is_relative_to(root) or not path.is_file():
            raise _fail(where, f"files: {rel!r} is not a file inside the skill folder (links are refused); fix the path")
    return list(value)


def _case(raw: Any, index: int, where: str, skill_dir: Path) -> EvalCase:
    if not isinstance(raw, dict):
        raise _fail(where, "a case must be an object with a prompt")
    prompt = raw.get("prompt", raw.get("question"))
    if not isinstance(prompt, str) or not prompt.strip():
        raise _fail(where, "needs a non-empty 'prompt' (or 'question')")
    case_id = str(raw.get("id", index + 1))
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", case_id):
        raise _fail(where, f"id {case_id!r}: use letters, digits, '.', '_' or '-' (at most 64)")
    expectations = raw.get("expectations", raw.get("assertions", raw.get("expected_behavior", [])))
    if isinstance(expectations, (str, dict)):
        expectations = [expectations]
    if not isinstance(expectations, list):
        raise _fail(where, "expectations must be a list of checks or sentences")
    case = EvalCase(id=case_id, prompt=prompt, files=_files(raw.get("files"), where, skill_dir),
                    expected_output=str(raw.get("expected_output", raw.get("ground_truth", "")) or ""))
    for n, item in enumerate(expectations):
        if isinstance(item, str):
            case.sentences.append(item)
        elif isinstance(item, dict):
            case.checks.append(_check(item, f"{where}.expectations[{n}]"))
        else:
            raise _fail(f"{where}.expectations[{n}]", "an expectation is a sentence or a check object")
    return case


def _skill_name(data: dict[str, Any], skill_dir: Path) -> str:
    from .discover import read_skill, skill_md

    name = data.get("skill_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    return read_skill(skill_dir).name if skill_md(skill_dir) else skill_dir.name


def load(skill_dir: Path, judge_model: str | None = None) -> EvalSet:
    """The eval set of ``skill_dir``; with ``judge_model`` the sentence-only cases are run too.

    Raises:
        ConfigError: no ``evals/evals.json``, JSON that does not parse, a malformed case, or no case
            to score (no check, and no judge model for the sentences).
    """
    file = skill_dir / "evals" / "evals.json"
    if not skill_dir.is_dir():
        raise ConfigError(f"{skill_dir}: not a folder; give a skill folder containing evals/evals.json")
    if not file.is_file():
        raise ConfigError(f"{file}: missing; a skill to evaluate needs evals/evals.json (see docs/skill-evals.md)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{file}: not valid JSON ({exc}); fix the file") from None
    if isinstance(data, list):
        data, key = {"evals": data}, "evals"
    elif isinstance(data, dict):
        key = "evals" if "evals" in data else "cases"
    else:
        raise ConfigError(f"{file}: must be an object with 'evals' (or 'cases'), or a list of cases")
    raw_cases = data.get(key)
    if not isinstance(raw_cases, list) or not raw_cases:
        raise ConfigError(f"{file}: '{key}' must be a non-empty list of cases")
    cases = [_case(raw, i, f"{file}: {key}[{i}]", skill_dir) for i, raw in enumerate(raw_cases)]
    seen: set[str] = set()
    for i, case in enumerate(cases):
        if case.id in seen:
            raise ConfigError(f"{file}: {key}[{i}]: id {case.id!r} is used twice; give every case its own id")
        seen.add(case.id)
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"{file}: defaults must be an object")
    image = defaults.get("image", DEFAULT_IMAGE)
    timeout = defaults.get("timeout_sec", DEFAULT_TIMEOUT_SEC)
    if not isinstance(image, str) or not re.fullmatch(r"[A-Za-z0-9._/:@-]+", image):
        raise ConfigError(f"{file}: defaults.image {image!r} is not an image reference")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ConfigError(f"{file}: defaults.timeout_sec must be a positive number of seconds")
    scored = [c for c in cases if c.checks or (judge_model and c.sentences)]
    if not scored:
        raise ConfigError(f"{file}: no case has a check the sandbox can run (plain-sentence expectations need "
                          "--judge-model); add e.g. {\"type\": \"file_exists\", \"path\": \"out.txt\"} to a case")
    custom = skill_dir / "evals" / "Dockerfile"
    if custom.is_symlink():
        raise ConfigError(f"{custom}: a link; make it a regular file")
    return EvalSet(skill_name=_skill_name(data, skill_dir), skill_dir=skill_dir, file=file, cases=scored,
                   unscored=[c for c in cases if not (c.checks or (judge_model and c.sentences))], image=image, timeout_sec=int(timeout),
                   dockerfile=custom if custom.is_file() else None, judge_model=judge_model)
