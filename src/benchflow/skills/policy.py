"""The run's skill policy: which skill folders a trial deploys, and how ``config.json`` records it.

Four inputs decide it (contracts §3.2, §7.1; the CLI reference's ``bench run``):

- the task's own ``sandbox.skills_dir`` — deployed unless ``--no-task-skills``;
- ``--task-skills`` — also the task's ``environment/skills`` (left out by default, as in 0.8);
- ``--skill-mode with-skill`` + ``--skills-dir`` — a host folder of skills for every task
  (``--skills-dir`` alone implies ``with-skill``);
- ``--skill-mode self-gen`` + ``--skill-creator-dir`` — only the skill creator is deployed, and the
  first prompt asks the agent to write its own skills with it before solving the task;
  ``--self-gen-no-internet`` turns the agent's web tools off for it (:mod:`.web_tools`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError, ConfigError

from .deploy import SkillSource, skill_paths, task_skill_sources

MODES = ("no-skill", "with-skill", "self-gen")
CREATOR = "skill-creator"
SELF_GEN_PREFACE = (
    "Before you work on the task below, write the skills you expect to need: use the skill-creator "
    "skill to create them in your skills folder, then solve the task using them.")


@dataclass(frozen=True)
class SkillPolicy:
    mode: str = "no-skill"
    task_skills: bool | None = None
    """None: the task's declared ``sandbox.skills_dir`` only; True: plus ``environment/skills``;
    False: no skill of the task at all."""
    skills_dir: Path | None = None
    creator_dir: Path | None = None
    """The ``skill-creator`` skill folder itself (resolved from ``--skill-creator-dir``)."""
    no_internet: bool = False
    """``--self-gen-no-internet``: the agent's web tools are turned off (self-gen only)."""


def _folder(value: str, flag: str) -> Path:
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"{flag} {value}: not a folder; give a folder of skills (one sub-folder each, "
                          "with a SKILL.md)")
    return path


def creator_skill(root: Path, flag: str = "--skill-creator-dir") -> Path:
    """The skill-creator folder: ``root`` itself when it is that skill, else ``root/skill-creator``."""
    if (root / "SKILL.md").is_file():
        return root
    if (root / CREATOR / "SKILL.md").is_file():
        return root / CREATOR
    raise ConfigError(f"{flag} {root}: no SKILL.md there or in {CREATOR}/; give the skill-creator skill "
                      "or a skills root holding it")


def policy_of(spec: Any) -> SkillPolicy:
    """The policy of a ``RunSpec`` (its ``skills`` section).

    Raises:
        ConfigError: a mode without its folder, a folder the mode does not use, or a missing folder.
    """
    given = spec.skills
    mode = given.mode or ("with-skill" if given.dir else "no-skill")
    if mode == "with-skill" and not given.dir:
        raise ConfigError("--skill-mode with-skill needs --skills-dir (a folder of skills to deploy)")
    if mode != "with-skill" and given.dir:
        raise ConfigError(f"--skills-dir is deployed only with --skill-mode with-skill, not {mode}; "
                          "drop one of them")
    if mode == "self-gen" and not given.creator_dir:
        raise ConfigError("--skill-mode self-gen needs --skill-creator-dir (the skill-creator skill)")
    if mode != "self-gen" and given.creator_dir:
        raise ConfigError("--skill-creator-dir is used only with --skill-mode self-gen; drop it or set the mode")
    if mode != "self-gen" and spec.skills.no_internet:
        raise ConfigError("--self-gen-no-internet turns web tools off for a self-generated run; add --skill-mode "
                          "self-gen (with --skill-creator-dir) or drop it")
    return SkillPolicy(
        mode=mode, task_skills=given.task_skills,
        skills_dir=_folder(given.dir, "--skills-dir") if given.dir else None,
        creator_dir=creator_skill(_folder(given.creator_dir, "--skill-creator-dir")) if given.creator_dir else None, no_internet=given.no_internet)


def _bundled(task: Any) -> Path | None:
    folder = Path(task.paths.environment_dir) / "skills"
    return folder if folder.is_dir() else None


def _task_sources(policy: SkillPolicy, task: Any) -> list[SkillSource]:
    if policy.task_skills is False or policy.mode == "self-gen":
        return []
    out = task_skill_sources(task)
    bundled = _bundled(task) if policy.task_skills else None
    if bundled is not None and all(Path(s.path) != bundled.resolve() for s in out if not s.in_sandbox):
        out.append(SkillSource(str(bundled.resolve())))
    return out


def sources(policy: SkillPolicy, task: Any) -> list[SkillSource]:
    """The folders a trial of ``task`` deploys, in order (a later skill of the same name wins).

    Raises:
        BenchError: the task's ``sandbox.skills_dir`` is not a folder inside the task.
    """
    out = _task_sources(policy, task)
    if policy.skills_dir is not None:
        out.append(SkillSource(str(policy.skills_dir)))
    if policy.creator_dir is not None:
        out.append(SkillSource(str(policy.creator_dir), single=True))
    return out


def image_keeps_task_skills(policy: SkillPolicy, task: Any, agent: Any) -> bool:
    """Whether the task's image may hold its ``environment/skills/`` (left out of a no-skill run's build).

    Kept for a with-skill run, with ``--task-skills`` or a declared ``sandbox.skills_dir`` (not under
    self-gen or ``--no-task-skills``), and for the oracle: the reference solution runs the task as authored.
    """
    if getattr(agent, "needs_oracle", False) or policy.mode == "with-skill":
        return True
    if policy.mode == "self-gen" or policy.task_skills is False:
        return False
    return bool(policy.task_skills or task.config.sandbox.skills_dir)


def record(policy: SkillPolicy, task: Any, agent: Any) -> dict[str, Any]:
    """The skill policy keys of ``config.json`` (contracts §3.2)."""
    try:
        deployed = sources(policy, task)
    except BenchError:  # the trial itself records a bad sandbox.skills_dir
        deployed = []
    kinds = ["task"] if len(deployed) > (policy.skills_dir is not None) + (policy.creator_dir is not None) else []
    if policy.skills_dir is not None:
        kinds.append("skills-dir")
    if policy.creator_dir is not None:
        kinds.append("skill-creator")
    requested = policy.skills_dir or policy.creator_dir or task.config.sandbox.skills_dir
    return {
        "skill_mode": policy.mode,
        "skill_source": "+".join(kinds) or "none",
        "requested_skills_dir": str(requested) if requested else None,
        "effective_skills_dir": ", ".join(s.path for s in deployed) or None,
        "skills_sandbox_dir": skill_paths(agent)[0] if deployed else None,
        "include_task_skills": bool(policy.task_skills),
        "self_gen_no_internet": policy.no_internet,
    }


def self_gen_prompts(policy: SkillPolicy, prompts: list[str]) -> list[str]:
    """Under self-gen the first prompt starts by asking for the agent's own skills."""
    if policy.mode != "self-gen" or not prompts:
        return prompts
    return [f"{SELF_GEN_PREFACE}\n\n{prompts[0]}", *prompts[1:]]
