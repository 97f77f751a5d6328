"""Leaving a task's bundled skills (``environment/skills/``) out of its image.

A no-skill run must not hand the agent the task's skills through the image
(contracts: "task-bundled environment/skills are stripped from the build
context in no-skill mode"). Leaving the folder out of the context is not enough
on its own: SkillsBench Dockerfiles ``COPY skills /root/.claude/skills`` (and
to every other agent's folder), which would then fail the build. So the
Dockerfile is rewritten too: a ``COPY``/``ADD`` from the context drops its
sources under ``skills/``, and an instruction left with none becomes a comment.
``COPY . /dest`` stays: the context it copies no longer holds the folder.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

from . import dockerfile_lines

FOLDER = "skills"
_COPY = re.compile(r"^\s*(COPY|ADD)\s+(.*)$", re.IGNORECASE | re.DOTALL)


def in_folder(rel: str) -> bool:
    """True for a context path (``skills``, ``./skills/x``, ``/skills``) inside the skills folder."""
    path = posixpath.normpath("/" + rel.replace("\\", "/").strip()).lstrip("/")
    return path == FOLDER or path.startswith(FOLDER + "/")


def present(environment_dir: Path | None) -> bool:
    return environment_dir is not None and (environment_dir / FOLDER).exists()


def _rewrite(keyword: str, body: str) -> str | None:
    """The instruction without its skills sources; None when none is left; unchanged text otherwise."""
    body = body.strip()
    flags: list[str] = []
    if body.startswith("["):
        try:
            args = json.loads(body)
        except ValueError:
            return f"{keyword} {body}"
        if not isinstance(args, list) or len(args) < 2 or not all(isinstance(a, str) for a in args):
            return f"{keyword} {body}"
        *sources, dest = args
        kept = [s for s in sources if not in_folder(s)]
        return None if not kept else f"{keyword} {json.dumps([*kept, dest])}"
    words = body.split()
    while words and words[0].startswith("--"):
        flags.append(words.pop(0))
    if any(f.lower().startswith("--from") for f in flags) or len(words) < 2:
        return f"{keyword} {body}"  # another stage or image: not the build context
    *sources, dest = words
    kept = [s for s in sources if not in_folder(s)]
    if len(kept) == len(sources):
        return f"{keyword} {body}"
    return None if not kept else " ".join([keyword, *flags, *kept, dest])


def without_skill_copies(dockerfile: str) -> str:
    """``dockerfile`` with every ``COPY``/``ADD`` of the context's ``skills/`` left out."""
    out: list[str] = []
    for lines in dockerfile_lines.instructions(dockerfile):
        joined = " ".join(line.rstrip().rstrip("\\") for line in lines)
        match = _COPY.match(joined)
        if not match:
            out.extend(lines)
            continue
        rewritten = _rewrite(match.group(1), match.group(2))
        if rewritten is None:
            out.append(f"# benchflow: no-skill run, task skills left out: {joined.strip()}")
        elif rewritten == f"{match.group(1)} {match.group(2).strip()}":
            out.extend(lines)
        else:
            out.append(rewritten)
    return "\n".join(out) + "\n"
