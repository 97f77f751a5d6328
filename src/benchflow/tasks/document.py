"""The ``task.md`` document: YAML frontmatter plus a Markdown body (contracts §1.3).

``parse_task_md`` splits and parses; ``split_sections`` finds the reserved
prompt headings in the body. The canonical form that ``bench tasks normalize``
and ``bench import`` write is :mod:`.task_md_writer`'s.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from benchflow.errors import TaskError

from . import frontmatter_cache

SECTION = re.compile(
    r"^##[ \t]+(?:(?P<prompt>prompt)|role:(?P<role>[A-Za-z0-9_.-]+)"
    r"|scene:(?P<scene>[A-Za-z0-9_.-]+)|(?P<persona>user-persona))[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
ESCAPED = re.compile(r"^\\(##[ \t]+(?:prompt|role:\S+|scene:\S+|user-persona)[ \t]*)$",
                     re.IGNORECASE | re.MULTILINE)


def read_utf8(path: Path, label: str | None = None) -> str:
    """A task file's text, or a TaskError naming it (not UTF-8, unreadable)."""
    name = label or path.name
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskError(f"{name}: is not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise TaskError(f"{name}: cannot be read ({exc.strerror}); check that it is a readable file") from None


def parse_task_md(text: str, source: str = "task.md") -> tuple[dict[str, Any], str]:
    """Split ``text`` into its frontmatter mapping and its body.

    Raises:
        TaskError: no frontmatter, no closing ``---``, a YAML error (with its
            line number in the file) or frontmatter that is not a mapping.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines or lines[0].strip() != "---":
        raise TaskError(f"{source}: must start with YAML frontmatter: put a line '---' first, "
                        "the task's settings, then another '---' before the prompt")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        raise TaskError(f"{source}: the frontmatter opened on line 1 is never closed; "
                        "add a line '---' after the settings")
    # The closing newline matters: without it a trailing block scalar (``key: |``) loses its last "\n".
    raw = "\n".join(lines[1:end]) + "\n"
    known, data = frontmatter_cache.cached(raw)
    if not known:
        data = _load_yaml(raw, source)
        frontmatter_cache.keep(raw, data)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise TaskError(f"{source}: the frontmatter must be a mapping of keys (e.g. 'agent:'), "
                        f"not a {type(data).__name__}")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise TaskError(f"{source}: frontmatter key {bad[0]!r} must be text; quote it or rename it")
    body = "\n".join(lines[end + 1:]).lstrip("\n")
    return data, body


def _load_yaml(raw: str, source: str) -> Any:
    import yaml

    try:
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: ~10x faster
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f"{source} line {mark.line + 2}" if mark is not None else source
        raise TaskError(f"{where}: YAML error: {problem}; fix the frontmatter syntax "
                        "(indentation, quotes, ':' after keys)") from None


def split_sections(body: str, source: str = "task.md") -> dict[str, Any]:
    """The prompt parts of a body: ``instruction``, ``roles``, ``scenes``, ``user_persona``.

    Without any reserved heading the whole body is the instruction; otherwise it
    is the ``## prompt`` section, or else the text before the first heading.

    Raises:
        TaskError: a section appears twice.
    """
    matches = list(SECTION.finditer(body))
    parts: dict[str, Any] = {"instruction": unescape(body).strip(), "roles": {}, "scenes": {},
                             "user_persona": None, "has_prompt_section": False}
    if not matches:
        return parts
    seen: set[str] = set()
    preamble = body[: matches[0].start()]
    prompt: str | None = None
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        text = unescape(body[match.end(): end]).strip()
        label = match.group(0).strip().lower()
        if label in seen:
            raise TaskError(f"{source}: section '{match.group(0).strip()}' appears twice; "
                            "merge the two sections into one")
        seen.add(label)
        if match.group("prompt"):
            prompt = text
        elif match.group("role"):
            parts["roles"][match.group("role")] = text
        elif match.group("scene"):
            parts["scenes"][match.group("scene")] = text
        else:
            parts["user_persona"] = text
    parts["has_prompt_section"] = prompt is not None
    parts["instruction"] = prompt if prompt is not None else unescape(preamble).strip()
    return parts


def escape_headings(text: str) -> str:
    """Prefix reserved headings with a backslash so imported prose stays one section."""
    return SECTION.sub(lambda m: "\\" + m.group(0), text)


def unescape(text: str) -> str:
    return ESCAPED.sub(r"\1", text)
