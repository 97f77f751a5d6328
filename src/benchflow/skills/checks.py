"""Static skill checks (the SkillEvaluator Tier 1 set): schema, version, pii, license,
code-integrity, dependency, unicode, quality, lint. No model call, no network.

``schema`` is the Agent Skills reference validator (``skills-ref``); the others
are built in, since no installable checker does them. Each check returns
findings; :mod:`.validate` decides which block.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .discover import MAX_TEXT_BYTES, Skill

SEVERITIES = ("critical", "high", "medium", "low", "info")
RANK = {name: i for i, name in enumerate(reversed(SEVERITIES))}
"""info 0 … critical 4."""


@dataclass
class Finding:
    check: str
    severity: str
    message: str
    file: str | None = None
    line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def _lines(skill: Skill, suffixes: tuple[str, ...] | None = None):
    """(relative path, line number, line) over the skill's text files."""
    for rel in skill.files:
        if suffixes is not None and rel.suffix.lower() not in suffixes:
            continue
        text = skill.text(rel)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            yield rel.as_posix(), number, line


def schema(skill: Skill, _min_score: int) -> list[Finding]:
    from skills_ref.validator import validate

    return [Finding("schema", "high", message) for message in validate(skill.path)]


_SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def version(skill: Skill, _min_score: int) -> list[Finding]:
    meta = skill.frontmatter.get("metadata")
    value = (meta or {}).get("version") if isinstance(meta, dict) else None
    value = value or skill.frontmatter.get("version")
    if not value:
        return [Finding("version", "info", "no version: add metadata.version (e.g. 1.0.0)", "SKILL.md")]
    if not _SEMVER.match(str(value)):
        return [Finding("version", "low", f"version {value!r} is not semantic (MAJOR.MINOR.PATCH)", "SKILL.md")]
    return []


_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_PHONE = re.compile(r"(?<![\w.])(?:\+\d{1,3}[ .-]?)?\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}(?![\w.])")
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){13,16}(?!\d)")
_EXAMPLE = re.compile(r"@(?:example\.(?:com|org|net)|.*\.(?:test|invalid|example)|localhost)$|noreply|no-reply")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def pii(skill: Skill, _min_score: int) -> list[Finding]:
    out = []
    for rel, number, line in _lines(skill):
        for email in _EMAIL.findall(line):
            if not _EXAMPLE.search(email.lower()):
                out.append(Finding("pii", "medium", "an email address", rel, number))
        if _PHONE.search(line):
            out.append(Finding("pii", "medium", "a phone number", rel, number))
        if _SSN.search(line):
            out.append(Finding("pii", "high", "a social security number shape", rel, number))
        for card in _CARD.findall(line):
            digits = re.sub(r"\D", "", card)
            if 13 <= len(digits) <= 16 and _luhn(digits) and len(set(digits)) > 2:
                out.append(Finding("pii", "high", "a payment card number (Luhn-valid)", rel, number))
    return out


def license_check(skill: Skill, _min_score: int) -> list[Finding]:
    if skill.frontmatter.get("license"):
        return []
    if any(rel.parent == Path(".") and rel.name.upper().startswith(("LICENSE", "LICENCE", "COPYING"))
           for rel in skill.files):
        return []
    return [Finding("license", "low", "no license: add a license field or a LICENSE file", "SKILL.md")]


_REFERENCE = re.compile(r"(?:\]\(|`)((?:scripts|references|assets|templates|examples)/[^)`\s#]+)")
_BINARY_MAGIC = (b"\x7fELF", b"MZ", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


def code_integrity(skill: Skill, _min_score: int) -> list[Finding]:
    out = []
    root = skill.path.resolve()
    for rel in skill.files:
        full = skill.path / rel
        if full.is_symlink():
            target = full.resolve()
            if target != root and root not in target.parents:
                out.append(Finding("code-integrity", "high", f"link leading out of the skill (to {target})",
                                   rel.as_posix()))
            continue
        try:
            size = full.stat().st_size
            head = full.read_bytes()[:4] if full.is_file() else b""
        except OSError:
            continue
        if head.startswith(_BINARY_MAGIC):
            out.append(Finding("code-integrity", "medium", "a compiled executable (its source cannot be reviewed)",
                               rel.as_posix()))
        elif size > MAX_TEXT_BYTES:
            out.append(Finding("code-integrity", "low", f"a large file ({size >> 20} MiB)", rel.as_posix()))
    for number, line in enumerate(skill.body.splitlines(), 1):
        for ref in _REFERENCE.findall(line):
            if not (skill.path / ref).exists():
                out.append(Finding("code-integrity", "medium", f"SKILL.md refers to {ref}, which is missing",
                                   "SKILL.md", number))
    return out


_PINNED = re.compile(r"(==|===|@\d|\.whl$|\.tar\.gz$)")
_INSTALL = re.compile(r"\b(?:pip3?|uv pip|python3? -m pip)\s+install\s+(.+)|\bnpm\s+(?:install|i)\s+(.+)")
_FROM_URL = re.compile(r"(?:git\+|https?://)\S+")


def _requirement(rel: str, number: int, spec: str) -> list[Finding]:
    spec = spec.split("#", 1)[0].strip()
    if not spec or spec.startswith("-"):
        return []
    if _FROM_URL.search(spec):
        return [Finding("dependency", "high", f"installs from a URL: {spec[:80]}", rel, number)]
    if not _PINNED.search(spec):
        return [Finding("dependency", "medium", f"unpinned dependency {spec[:80]!r}: pin an exact version", rel, number)]
    return []


def dependency(skill: Skill, _min_score: int) -> list[Finding]:
    out = []
    for rel in skill.files:
        text = skill.text(rel)
        if text is None:
            continue
        name = rel.name.lower()
        if name.startswith("requirements") and name.endswith(".txt"):
            for number, line in enumerate(text.splitlines(), 1):
                out.extend(_requirement(rel.as_posix(), number, line))
        elif name == "package.json":
            try:
                deps = {**(json.loads(text).get("dependencies") or {})}
            except (ValueError, AttributeError):
                continue
            for dep, wanted in deps.items():
                if not re.match(r"^\d+\.\d+\.\d+$", str(wanted)):
                    out.append(Finding("dependency", "medium", f"{dep}@{wanted} is not an exact version",
                                       rel.as_posix()))
    for rel, number, line in _lines(skill, (".sh", ".bash", ".md", ".py", "")):
        found = _INSTALL.search(line)
        if found:
            args = (found.group(1) or found.group(2) or "").split(";")[0].split("&&")[0]
            for spec in args.split():
                if not spec.startswith("-") and spec not in {"-r", "install"}:
                    out.extend(_requirement(rel, number, spec.strip("'\"")))
    return out


_HIDDEN = {**{chr(c): "zero-width character" for c in (0x200B, 0x200C, 0x200D, 0x2060, 0x180E)},
           **{chr(c): "bidirectional control" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}}


def hidden_unicode(text: str) -> list[tuple[int, str]]:
    """(line, what) for each line hiding characters a reader does not see."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if any(0xE0000 <= ord(ch) <= 0xE007F for ch in line):
            out.append((number, "Unicode tag characters (invisible text)"))
            continue
        kinds = sorted({_HIDDEN[ch] for ch in line if ch in _HIDDEN} |
                       ({"byte-order mark"} if "\ufeff" in line[1 if number == 1 else 0:] else set()))
        if kinds:
            out.append((number, ", ".join(kinds)))
    return out


def unicode_check(skill: Skill, _min_score: int) -> list[Finding]:
    out = []
    for rel in skill.files:
        text = skill.text(rel)
        for number, what in hidden_unicode(text or ""):
            severity = "critical" if "tag" in what else "high"
            out.append(Finding("unicode", severity, f"hidden text: {what}", rel.as_posix(), number))
    return out


def quality_score(skill: Skill) -> int:
    """0–100 from the SKILL.md's shape: a description saying what and when, a body with headings,
    examples and a reasonable length (the spec advises under 500 lines)."""
    score = 100
    description = skill.description
    if len(description) < 40:
        score -= 20
    if not re.search(r"\b(use|when|for)\b", description, re.IGNORECASE):
        score -= 10
    body = skill.body.strip()
    if len(body) < 200:
        score -= 20
    if not re.search(r"^#{1,3} ", body, re.MULTILINE):
        score -= 10
    if "```" not in body and "`" not in body:
        score -= 10
    if len(body.splitlines()) > 500:
        score -= 15
    if skill.parse_error:
        score -= 30
    return max(score, 0)


def quality(skill: Skill, min_score: int) -> list[Finding]:
    score = quality_score(skill)
    if score < min_score:
        return [Finding("quality", "low", f"quality score {score} is below {min_score}", "SKILL.md")]
    return []


def _syntax(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["syntax error"])[-1]


def lint(skill: Skill, _min_score: int) -> list[Finding]:
    out = []
    for rel in skill.files:
        text = skill.text(rel)
        if text is None:
            continue
        where = rel.as_posix()
        if rel.suffix == ".py":
            try:
                compile(text, where, "exec")
            except SyntaxError as exc:
                out.append(Finding("lint", "medium", f"Python syntax error: {exc.msg}", where, exc.lineno))
        elif rel.suffix in (".sh", ".bash") or text.startswith(("#!/bin/sh", "#!/bin/bash", "#!/usr/bin/env bash")):
            shell = "bash" if rel.suffix == ".bash" or "bash" in text.split("\n", 1)[0] else "sh"
            error = _syntax([shell, "-n", str(skill.path / rel)])
            if error:
                out.append(Finding("lint", "medium", f"shell syntax error: {error[:200]}", where))
            if not text.startswith("#!"):
                out.append(Finding("lint", "low", "script without a #! line", where))
        elif rel.suffix == ".json":
            try:
                json.loads(text)
            except ValueError as exc:
                out.append(Finding("lint", "medium", f"invalid JSON: {exc}", where))
    return out


CHECKS: dict[str, Callable[[Skill, int], list[Finding]]] = {
    "schema": schema, "version": version, "pii": pii, "license": license_check,
    "code-integrity": code_integrity, "dependency": dependency, "unicode": unicode_check,
    "quality": quality, "lint": lint,
}
"""The Tier 1 checks, in the reference's order (``--checks`` picks among these names)."""
