"""A Dockerfile's lines grouped into instructions, for the rewrites bench makes before a build.

A trailing ``\\`` continues an instruction, and a heredoc (``RUN python3 - <<'PY'`` … ``PY``)
carries its body with it: those lines are script text, not instructions. Real tasks put Python
there (``from huggingface_hub import …``), which a line-by-line ``FROM`` match would take for a
base image, and then rewrite or add the CA lines into the script.
"""

from __future__ import annotations

import re

HEREDOC = re.compile(r"(?<![<\w])<<(?!<)-?\s*([\"']?)([A-Za-z_]\w*)\1")
"""``<<EOF``, ``<<-EOF``, ``<<'EOF'``, ``<<"EOF"``: the terminator word is group 2."""


def instructions(text: str) -> list[list[str]]:
    """The lines of ``text``, one list per instruction (a comment or blank line is one of its own)."""
    out: list[list[str]] = []
    current: list[str] = []
    open_heredocs: list[str] = []
    for line in text.splitlines():
        current.append(line)
        if open_heredocs:
            if line.strip() == open_heredocs[0]:
                open_heredocs.pop(0)
            if not open_heredocs:
                out.append(current)
                current = []
            continue
        if len(current) == 1 and line.lstrip().startswith("#"):
            out.append(current)
            current = []
            continue
        open_heredocs.extend(match.group(2) for match in HEREDOC.finditer(line))
        if open_heredocs or line.rstrip().endswith("\\"):
            continue
        out.append(current)
        current = []
    if current:
        out.append(current)
    return out

