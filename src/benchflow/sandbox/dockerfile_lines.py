"""A Dockerfile's lines grouped into instructions, for the rewrites bench makes before a build.

A trailing escape (``\\``) continues an instruction, and a heredoc (``RUN python3 - <<'PY'`` …
``PY``) carries its body with it: those lines are script text, not instructions. Real tasks put
Python there (``from huggingface_hub import …``), which a line-by-line ``FROM`` match would take
for a base image, and then rewrite or add the CA lines into the script.

The grouping follows BuildKit's parser (``frontend/dockerfile/parser``): continuation lines are
joined without their escape (comment and blank lines among them skipped); only ``RUN``, ``COPY``
and ``ADD`` in shell form take heredocs; a heredoc is a word of the joined line that starts with
``<<`` (``<<EOF``, ``<<-EOF``, ``<<'EOF'``, ``2<<EOF``); the bodies follow the joined line in the
order the words came, each ending at a line that is its terminator exactly (``<<-``: after leading
tabs). A body is kept as written; :attr:`Heredoc.content` is what a ``<<-`` leaves of it.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

HEREDOC_WORD = re.compile(r"^(\d*)<<(-?)([^<]*)$")
"""A word that opens a heredoc; group 3 is its terminator, maybe quoted."""
TAKES_HEREDOCS = ("RUN", "COPY", "ADD")
_VAR = re.compile(r"\\\$|\$\{(\w+)(?::([-+])([^}]*))?\}|\$(\w+)")
_DIRECTIVE = re.compile(r"#\s*(\w+)\s*=\s*(\S+)\s*$")


@dataclass(frozen=True)
class Heredoc:
    name: str
    """The terminator, unquoted."""
    chomp: bool
    """``<<-``: leading tabs are stripped from the body (and the terminator line)."""
    expand: bool
    """The terminator was not quoted: a builder expands variables in a ``COPY`` body."""
    body: str = ""
    """The lines as written, each ending in a newline."""
    terminated: bool = True

    @property
    def content(self) -> str:
        """The body, less its leading tabs when the heredoc is a ``<<-``."""
        return re.sub(r"(?m)^\t+", "", self.body) if self.chomp else self.body


@dataclass(frozen=True)
class Instruction:
    lines: list[str]
    """Its physical lines: continuations, comments among them, heredoc bodies and terminators."""
    line: int
    """The 1-based number of its first line."""
    text: str = ""
    """The instruction as BuildKit reads it: continuations joined, no bodies ("" for a comment or blank)."""
    head: int = 1
    """How many of :attr:`lines` come before the heredoc bodies."""
    heredocs: tuple[Heredoc, ...] = ()

    @property
    def keyword(self) -> str:
        return self.text.split(None, 1)[0].upper() if self.text.strip() else ""

    def flags_and_command(self) -> tuple[list[str], str]:
        """The ``--flag`` words after the keyword, and the rest (stripped) as BuildKit splits them."""
        rest = self.text.strip().split(None, 1)[1] if len(self.text.split(None, 1)) > 1 else ""
        flags: list[str] = []
        while rest.startswith("--"):
            word, _, rest = rest.partition(" ")
            flags.append(word)
            rest = rest.lstrip()
        return flags, rest.strip()


def escape_char(text: str) -> str:
    """The parser directive ``# escape=`` among the first lines, else ``\\``."""
    for raw in text.split("\n"):
        match = _DIRECTIVE.match(raw)
        if not match:
            break
        if match.group(1).lower() == "escape":
            return match.group(2)
    return "\\"


def words(line: str) -> list[str]:
    """``line`` split as a shell splits it into words, quotes and escapes kept in each word."""
    out: list[str] = []
    word: list[str] = []
    quote = ""
    i = 0
    while i < len(line):
        char = line[i]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\" and i + 1 < len(line):
            word.append(char)
            i += 1
            char = line[i]
        elif quote == '"':
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char.isspace():
            if word:
                out.append("".join(word))
                word = []
            i += 1
            continue
        word.append(char)
        i += 1
    if word:
        out.append("".join(word))
    return out


def heredoc_of(word: str) -> Heredoc | None:
    """The heredoc ``word`` opens (no body yet), or None."""
    match = HEREDOC_WORD.match(word)
    if not match or not match.group(3):
        return None
    rest = match.group(3)
    try:
        unquoted = shlex.split(rest)
    except ValueError:
        return None
    if len(unquoted) != 1:
        return None
    name = unquoted[0]
    quotes = rest.count("'") + rest.count('"')
    return Heredoc(name=name, chomp=match.group(2) == "-", expand=quotes == name.count("'") + name.count('"'))


def heredoc_words(line: str) -> list[tuple[str, Heredoc | None]]:
    """The :func:`words` of ``line``, each with the heredoc it opens (``<< EOF``, spaced as BuildKit
    0.22 allows, is one word)."""
    out: list[tuple[str, Heredoc | None]] = []
    split = words(line)
    i = 0
    while i < len(split):
        word = split[i]
        if re.fullmatch(r"\d*<<-?", word) and i + 1 < len(split):
            word = f"{word} {split[i + 1]}"
            i += 1
        out.append((word, heredoc_of(word)))
        i += 1
    return out


def _is_json(command: str) -> bool:
    if not command.startswith("["):
        return False
    try:
        return isinstance(json.loads(command), list)
    except ValueError:
        return False


def _split(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _skipped(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def parse(text: str) -> list[Instruction]:
    """``text`` as a list of :class:`Instruction` (a comment or blank line is one of its own)."""
    escape = re.escape(escape_char(text))
    continued = re.compile(rf"(?<!{escape}){escape}[ \t\r]*$")
    lines = _split(text)
    out: list[Instruction] = []
    i = 0
    while i < len(lines):
        start, joined = i, lines[i].lstrip()
        i += 1
        if _skipped(lines[i - 1]):
            out.append(Instruction([lines[start]], start + 1))
            continue
        more = continued.search(joined)
        while more and i < len(lines):
            i += 1
            if _skipped(lines[i - 1]):
                continue
            joined = joined[:more.start()] + lines[i - 1]
            more = continued.search(joined)
        joined = joined.rstrip("\r")
        head = i - start
        heredocs: list[Heredoc] = []
        probe = Instruction([], start + 1, joined)
        if probe.keyword in TAKES_HEREDOCS and "<<" in joined and not _is_json(probe.flags_and_command()[1]):
            for doc in filter(None, (doc for _, doc in heredoc_words(joined))):
                body: list[str] = []
                terminated = False
                while i < len(lines):
                    line = lines[i]
                    i += 1
                    candidate = line.rstrip("\r")
                    if (candidate.lstrip("\t") if doc.chomp else candidate) == doc.name:
                        terminated = True
                        break
                    body.append(line + "\n")
                heredocs.append(Heredoc(doc.name, doc.chomp, doc.expand, "".join(body), terminated))
        out.append(Instruction(lines[start:i], start + 1, joined, head, tuple(heredocs)))
    return out


def instructions(text: str) -> list[list[str]]:
    """The lines of ``text``, one list per instruction (a comment or blank line is one of its own)."""
    return [instruction.lines for instruction in parse(text)]


def substitute(text: str, variables: dict[str, str]) -> str:
    """Expand ``$VAR``, ``${VAR}``, ``${VAR:-default}`` and ``${VAR:+alt}`` like Docker does."""

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "\\$":
            return "$"
        name = m.group(1) or m.group(4)
        value = variables.get(name, "")
        if m.group(2) == "-":
            return value or m.group(3)
        if m.group(2) == "+":
            return m.group(3) if value else ""
        return value

    return _VAR.sub(repl, text)


def referenced(text: str) -> set[str]:
    """The variable names :func:`substitute` would look up in ``text``."""
    return {m.group(1) or m.group(4) for m in _VAR.finditer(text) if m.group(0) != "\\$"}
