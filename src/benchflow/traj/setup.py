"""``bench traj setup``: the submit skill for the agents on this machine, the agent prompt, recent sessions.

The skill (``benchflow-traj-submit/SKILL.md``) teaches an agent to share the
session it is in: find its trajectory, show the user the redacted preview
(``bench traj upload --dry-run``, then ``bench view --confirm``) and upload
only after the user approved. It is installed into each registry agent's
skills folder on the host (the agent's ``skill_paths`` with ``$HOME`` read as
this user's home) when that agent's own folder exists here (``~/.claude``
for ``~/.claude/skills``): agents never used on this machine are left alone.
``--prompt`` prints the same instructions as one prompt to paste instead.
``--list`` shows the newest local sessions of the agents BenchFlow knows how
to read (Claude Code, Codex, Gemini CLI).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from benchflow.util import atomic

SKILL_NAME = "benchflow-traj-submit"
SESSION_GLOBS = {
    "claude-code": (".claude/projects", "*/*.jsonl"),
    "codex": (".codex/sessions", "**/*.jsonl"),
    "gemini": (".gemini/tmp", "**/*.json*"),
}

STEPS = """\
1. Find this session's trajectory file: for Claude Code the newest `*.jsonl` under
   `~/.claude/projects/<this project>/`; otherwise run `bench traj setup --list` and pick it.
2. Run `bench traj upload <file> --dry-run` and show the user its redacted preview and the
   "Masked for you" line. Never paste unredacted content anywhere.
3. Run `bench view <file> --confirm --redaction-summary "<that masked line>"` and ask the user
   to look at it. Continue only if it prints `DECISION: approved` (exit 0); stop on `rejected`.
4. Run `bench traj upload <file> --yes` (the user approved in step 3; add `--workspace-dir <folder>`
   only if the user asked to share the workspace). Report the capture digest it prints;
   `bench traj status <digest>` tells whether it has been verified.
"""

SKILL_MD = f"""\
---
name: {SKILL_NAME}
description: Share this agent session's trajectory with BenchFlow, redacted and only after the user approves it. Use when the user asks to submit, share or upload this session or trajectory.
---

# Submit this session's trajectory

Uploading sends the session to a BenchFlow Hub. Do it only when the user asked for it.

{STEPS}"""

PROMPT = f"""\
Please share this session's trajectory with BenchFlow, redacted, and only with my approval:

{STEPS}"""


@dataclass(frozen=True)
class SkillTarget:
    agent: str
    folder: Path
    """``<skills dir>/benchflow-traj-submit``."""

    @property
    def up_to_date(self) -> bool:
        file = self.folder / "SKILL.md"
        return file.is_file() and file.read_text(errors="replace") == SKILL_MD


@dataclass(frozen=True)
class Session:
    agent: str
    path: Path
    size: int
    modified: float


def skill_targets(home: Path | None = None) -> list[SkillTarget]:
    """Where the skill goes: each registry agent's host skills folder whose agent folder exists here."""
    from benchflow.agents.registry import list_agents

    home = home or Path.home()
    seen: set[Path] = set()
    targets: list[SkillTarget] = []
    for config in list_agents():
        for raw in config.skill_paths:
            if not raw.startswith("$HOME/"):
                continue  # $WORKSPACE skills belong to a sandbox, not this machine
            skills = home / raw[len("$HOME/"):]
            if skills in seen or not skills.parent.is_dir():
                continue
            seen.add(skills)
            targets.append(SkillTarget(config.name, skills / SKILL_NAME))
    return targets


def install(targets: list[SkillTarget]) -> list[SkillTarget]:
    """Write the skill into each target not already up to date; returns those written."""
    written = []
    for target in targets:
        if target.up_to_date:
            continue
        atomic.write_text(target.folder / "SKILL.md", SKILL_MD)
        written.append(target)
    return written


def recent_sessions(home: Path | None = None, limit: int = 20) -> list[Session]:
    """The newest session files of the known agents, newest first."""
    home = home or Path.home()
    found: list[Session] = []
    for agent, (folder, pattern) in SESSION_GLOBS.items():
        root = home / folder
        if not root.is_dir():
            continue
        for path in root.glob(pattern):
            if path.is_file() and not path.is_symlink():
                stat = path.stat()
                found.append(Session(agent, path, stat.st_size, stat.st_mtime))
    found.sort(key=lambda s: s.modified, reverse=True)
    return found[:limit]


def age(seconds_since: float) -> str:
    delta = max(0, time.time() - seconds_since)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if delta >= size:
            return f"{int(delta // size)}{unit} ago"
    return "just now"
