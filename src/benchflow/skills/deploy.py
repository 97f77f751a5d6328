"""Deploy skill folders into a sandbox, where the agent looks for skills.

A skills folder holds one sub-folder per skill (each with a ``SKILL.md``). The
registry entry of an agent says where it looks (``skill_paths``, e.g.
``$HOME/.claude/skills``); an agent without one (and the oracle) gets
``$HOME/.agents/skills``. ``$HOME`` is the home of the user the agent runs as
(root's for the oracle), ``$WORKSPACE`` the sandbox's workspace. A source is a
host folder (uploaded) or, when it is a sandbox path, copied inside the
sandbox; the deployed folders belong to the agent's user.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError

DEFAULT_SKILL_PATH = "$HOME/.agents/skills"
_HOME = 'getent passwd "$0" 2>/dev/null | cut -d: -f6'
_COPY_INSIDE = 'mkdir -p "$1" && cp -a "$0"/. "$1"/'
# $0 user (empty: root keeps them)  $1 home  then the targets: each is the user's, and so is every
# folder between the home and it that the copy created.
_OWN = ('u=$0; h=$1; shift; [ -z "$u" ] && exit 0; for t; do chown -R "$u" "$t" || exit 1; '
        'p=$(dirname "$t"); while [ "$p" != "$h" ] && [ "$p" != / ] && [ "${p#"$h"/}" != "$p" ]; do '
        'chown "$u" "$p"; p=$(dirname "$p"); done; done')


@dataclass(frozen=True)
class SkillSource:
    """Where skills come from: a host folder, or (``in_sandbox``) a folder inside the sandbox."""

    path: str
    in_sandbox: bool = False
    single: bool = False
    """The folder is one skill (deployed under its own name), not a folder of skills."""


def skill_paths(agent: Any) -> list[str]:
    """The agent's skill folders as the registry gives them."""
    config = getattr(agent, "config", None)
    declared = list(getattr(config, "skill_paths", None) or [])
    reference = getattr(config, "reference", None)
    if not declared and reference is not None:
        declared = list(reference.skill_paths)
    return declared or [DEFAULT_SKILL_PATH]


async def _home(sandbox: Any, user: str | None) -> str:
    if user is None:
        return "/root"
    found = await sandbox.exec(["sh", "-c", _HOME, user], timeout=30)
    home = found.stdout.strip()
    return home if found.success and home.startswith("/") else f"/home/{user}"


async def deploy_skills(sandbox: Any, sources: list[SkillSource], agent: Any, user: str | None,
                        workdir: str) -> list[str]:
    """Copy every source's skills into each of the agent's skill folders; returns those folders.

    Raises:
        BenchError: an upload or copy failed.
    """
    if not sources:
        return []
    home = await _home(sandbox, user)
    targets = [posixpath.normpath(p.replace("$HOME", home).replace("$WORKSPACE", workdir))
               for p in skill_paths(agent)]
    for target in targets:
        for source in sources:
            if source.in_sandbox:
                done = await sandbox.exec(["sh", "-c", _COPY_INSIDE, source.path, target], timeout=300)
                if not done.success:
                    raise BenchError(f"skills: copying {source.path} to {target} failed: {done.stderr.strip()[:300]}")
            elif source.single:
                await sandbox.put(Path(source.path), f"{target}/{Path(source.path).name}")
            else:
                for skill in sorted(Path(source.path).iterdir()):
                    if skill.is_dir():
                        await sandbox.put(skill, f"{target}/{skill.name}")
    owned = await sandbox.exec(["sh", "-c", _OWN, user or "", home, *targets], timeout=120)
    if not owned.success:
        raise BenchError(f"skills: giving {', '.join(targets)} to {user} failed: {owned.stderr.strip()[:300]}")
    return targets


def task_skill_sources(task: Any) -> list[SkillSource]:
    """``sandbox.skills_dir`` of the task: a folder inside the task (relative) or inside the sandbox
    (absolute). ``--task-skills`` (``environment/skills``) and ``--skills-dir`` add to these."""
    declared = task.config.sandbox.skills_dir
    if not declared:
        return []
    if declared.startswith("/"):
        return [SkillSource(declared, in_sandbox=True)]
    folder = (task.path / declared).resolve()
    if not folder.is_dir() or not str(folder).startswith(str(Path(task.path).resolve()) + "/"):
        raise BenchError(f"task.md: sandbox.skills_dir {declared!r} is not a folder inside the task; fix the path")
    return [SkillSource(str(folder))]
