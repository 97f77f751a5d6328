"""Find skills (folders holding a ``SKILL.md``) and read them for ``bench skills list`` and ``validate``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".pytest_cache"})
MAX_TEXT_BYTES = 2 << 20
"""Files larger than this are not read as text (the integrity check notes them)."""


@dataclass
class Skill:
    """One skill folder, read once: its ``SKILL.md`` split, and every file under it."""

    path: Path
    frontmatter: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    raw: str = ""
    parse_error: str | None = None
    files: list[Path] = field(default_factory=list)
    """Every entry under the folder (links not followed), relative to ``path``."""

    @property
    def name(self) -> str:
        value = self.frontmatter.get("name")
        return value if isinstance(value, str) and value.strip() else self.path.name

    @property
    def description(self) -> str:
        value = self.frontmatter.get("description")
        return " ".join(value.split()) if isinstance(value, str) else ""

    def text(self, rel: Path) -> str | None:
        """The file's text, or None when it is a link, binary, unreadable or too large."""
        full = self.path / rel
        try:
            if full.is_symlink() or not full.is_file() or full.stat().st_size > MAX_TEXT_BYTES:
                return None
            data = full.read_bytes()
        except OSError:
            return None
        if b"\0" in data[:8192]:
            return None
        return data.decode("utf-8", "replace")


def skill_md(folder: Path) -> Path | None:
    for name in ("SKILL.md", "skill.md"):
        if (folder / name).is_file():
            return folder / name
    return None


def find_skills(paths: list[Path]) -> list[Path]:
    """Skill folders: each path that is one, else every folder under it holding a ``SKILL.md``
    (searched recursively, hidden and dependency folders skipped), sorted, each once."""
    found: set[Path] = set()
    for root in paths:
        root = Path(root)
        if skill_md(root) is not None:
            found.add(root.resolve())
            continue
        for here, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            if "SKILL.md" in names or "skill.md" in names:
                found.add(Path(here).resolve())
    return sorted(found)


def read_skill(folder: Path) -> Skill:
    """The skill at ``folder``; a ``SKILL.md`` that does not parse leaves ``parse_error`` set."""
    from skills_ref.errors import ParseError
    from skills_ref.parser import parse_frontmatter

    skill = Skill(path=folder)
    md = skill_md(folder)
    if md is None:
        skill.parse_error = "Missing required file: SKILL.md"
    else:
        skill.raw = md.read_text(encoding="utf-8", errors="replace")
        try:
            skill.frontmatter, skill.body = parse_frontmatter(skill.raw)
        except ParseError as exc:
            skill.parse_error = str(exc)
            skill.body = skill.raw
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        base = Path(here)
        for name in sorted(names) + [d for d in dirs if (base / d).is_symlink()]:
            skill.files.append((base / name).relative_to(folder))
    return skill
