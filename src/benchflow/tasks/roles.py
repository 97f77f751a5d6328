"""Document-only prompt parts of a task.md: roles, scenes, the user persona (contracts §1.5).

These keys are not part of TaskConfig; they are validated here and merged with
the body sections and ``prompts/*.md`` sidecars (a sidecar wins over a body
section of the same name).
"""

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


from .document import read_utf8
from .validation import issues_of, problems_error

DOCUMENT_KEYS = frozenset({"agents", "scenes", "user", "benchflow"})


# Empty lists and dicts are plain defaults, not ``default_factory``: see ``benchflow.jobs.spec``.
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoleConfig(_Strict):
    agent: str
    model: str | None = None
    reasoning_effort: str | None = None
    env: dict[str, str] = {}
    timeout_sec: int | None = Field(None, gt=0)
    idle_timeout_sec: int | None = Field(None, gt=0)
    skills_dir: str | None = None
    capabilities: list[str] = []


class AgentsBlock(_Strict):
    roles: dict[str, RoleConfig] = {}


class Turn(_Strict):
    role: str
    prompt: str | None = None


class SceneConfig(_Strict):
    name: str | None = None
    roles: list[str] | None = None
    turns: list[str | Turn] = []
    skills_dir: str | None = None


class DocumentKeys(_Strict):
    agents: AgentsBlock = Field(default_factory=AgentsBlock)
    scenes: list[SceneConfig] = []
    user: dict[str, Any] | None = None
    benchflow: dict[str, Any] = {}


def document_issues(doc: dict[str, Any], source: str) -> tuple[DocumentKeys | None, list[str]]:
    """Validate the document-only keys; (model or None, problems)."""
    from pydantic import ValidationError

    try:
        model = DocumentKeys.model_validate({k: v for k, v in doc.items() if k in DOCUMENT_KEYS})
    except ValidationError as exc:
        return None, issues_of(exc, source, DocumentKeys)
    problems: list[str] = []
    declared = set(model.agents.roles)
    for i, scene in enumerate(model.scenes):
        label = scene.name or f"scene-{i}"
        allowed = set(scene.roles) if scene.roles is not None else declared
        for role in scene.roles or []:
            if role not in declared:
                problems.append(f"{source}: scene '{label}' names role '{role}' that agents.roles "
                                "does not declare; declare it or remove it from the scene")
        for turn in scene.turns:
            role = turn if isinstance(turn, str) else turn.role
            if role not in declared or role not in allowed:
                problems.append(f"{source}: a turn of scene '{label}' names role '{role}' that is not "
                                "declared for this scene; add it to agents.roles and the scene's roles")
    return model, problems


def read_sidecars(task_dir: Path) -> dict[str, Any]:
    """``prompts/*.md`` sidecars as {"roles": {...}, "scenes": {...}, "user_persona": str|None}."""
    out: dict[str, Any] = {"roles": {}, "scenes": {}, "user_persona": None}
    folder = task_dir / "prompts"
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.md")):
        text = read_utf8(path, f"prompts/{path.name}").strip()
        stem = path.stem
        if stem == "user-persona":
            out["user_persona"] = text
        elif stem.startswith("role.") and len(stem) > 5:
            out["roles"][stem[5:]] = text
        elif stem.startswith("scene.") and len(stem) > 6:
            out["scenes"][stem[6:]] = text
    return out


def build_prompt_parts(model: DocumentKeys, sections: dict[str, Any],
                       sidecars: dict[str, Any]) -> tuple[dict[str, dict], list[dict], str | None]:
    """(roles, scenes, user_persona) with prompts resolved; sidecars override body sections."""
    role_prompts = {**sections["roles"], **sidecars["roles"]}
    scene_prompts = {**sections["scenes"], **sidecars["scenes"]}
    roles: dict[str, dict] = {}
    for name, cfg in model.agents.roles.items():
        roles[name] = {**cfg.model_dump(), "prompt": role_prompts.get(name)}
    for name, prompt in role_prompts.items():
        roles.setdefault(name, {"prompt": prompt})
    scenes: list[dict] = []
    for i, scene in enumerate(model.scenes):
        name = scene.name or f"scene-{i}"
        turns = [{"role": t, "prompt": None} if isinstance(t, str) else t.model_dump() for t in scene.turns]
        if scene.roles is not None:
            members = list(scene.roles)
        elif turns:
            members = list(dict.fromkeys(t["role"] for t in turns))
        else:
            members = list(model.agents.roles)
        if not turns:
            turns = [{"role": r, "prompt": None} for r in members]
        scenes.append({"name": name, "roles": members, "turns": turns, "skills_dir": scene.skills_dir,
                       "prompt": scene_prompts.get(name)})
    persona = sidecars["user_persona"] if sidecars["user_persona"] is not None else sections["user_persona"]
    return roles, scenes, persona


def require_valid(doc: dict[str, Any], source: str) -> DocumentKeys:
    model, problems = document_issues(doc, source)
    if problems or model is None:
        raise problems_error(problems)
    return model
