"""The reviewer's instruction, and custom templates (``bench review --prompt FILE``).

A template is plain text with ``$name`` placeholders (Python ``string.Template``;
write ``$$`` for a literal dollar sign):

- ``$rubric``: the criteria, each with its name, kind and guidance (author
  descriptions are never shown to the reviewer);
- ``$answer_format``: an example of the JSON answer the rubric asks for;
- ``$answer_path``: where to write the answer (``/logs/agent/review.json``);
- ``$evidence``: what is under ``/evidence`` for this rollout;
- ``$task_name`` and ``$reward``: the reviewed task and the verifier's reward.

An unknown placeholder is refused before any reviewer starts.
"""

from __future__ import annotations

import string
from pathlib import Path

from benchflow.errors import ConfigError

from .answer import answer_format
from .rubric import Rubric

ANSWER_PATH = "/logs/agent/review.json"
PLACEHOLDERS = ("rubric", "answer_format", "answer_path", "evidence", "task_name", "reward")

DEFAULT_TEMPLATE = """\
You are reviewing a finished attempt of an AI agent at a benchmark task ($task_name). The task's own \
tests gave it reward $reward. Judge the attempt against the rubric below, using only the evidence; \
do not try to fix or redo the work.

Evidence (read-only):
$evidence

Rubric:
$rubric

When you are done, write your verdict as one JSON object, exactly in this shape, to $answer_path, \
and end your final message with the same JSON object:
$answer_format
"""


def _kind_line(rubric: Rubric) -> str:
    lines = []
    for crit in rubric.criteria:
        if crit.kind == "scored":
            kind = f"scored 0, 1 or 2 (weight {crit.weight})"
        elif crit.kind == "blocker":
            kind = "blocker: pass or fail"
        else:
            kind = "pass, fail or not_applicable"
        lines.append(f"- {crit.name} [{kind}]: {crit.guidance.strip() or '(no guidance)'}")
    return "\n".join(lines)


def load_template(path: Path | None) -> str:
    """The default template, or the one in ``path`` checked for unknown placeholders.

    Raises:
        ConfigError: unreadable file, or a placeholder that is not one of :data:`PLACEHOLDERS`.
    """
    if path is None:
        return DEFAULT_TEMPLATE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--prompt {path}: cannot read it ({exc}); give a UTF-8 text file") from None
    template = string.Template(text)
    if not template.is_valid():
        raise ConfigError(f"--prompt {path}: a '$' that is not a placeholder; write $$ for a literal dollar sign")
    unknown = sorted(set(template.get_identifiers()) - set(PLACEHOLDERS))
    if unknown:
        raise ConfigError(f"--prompt {path}: unknown placeholder ${unknown[0]}; use "
                          + ", ".join(f"${p}" for p in PLACEHOLDERS))
    return text


def render(template: str, rubric: Rubric, *, evidence: str, task_name: str, reward: float | None) -> str:
    return string.Template(template).substitute(
        rubric=_kind_line(rubric), answer_format=answer_format(rubric), answer_path=ANSWER_PATH,
        evidence=evidence, task_name=task_name, reward="none (unscored)" if reward is None else f"{reward:g}")
