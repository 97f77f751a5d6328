"""Scenes given by the run (a run config's ``scenes:``, the rollout/scene YAML of contracts §7.1).

``scenes: [{name, roles: [{name, agent, model, reasoning_effort, env, timeout_sec,
idle_timeout_sec, skills_dir}], turns: [<role> | {role, prompt}], skills_dir}]``
replaces the scenes of every task the run selects: each run role is the task's
role of that name (its prompt, its other keys) with the run's keys on top, or a
new role. A scene without turns gets one turn per role. The run's config is the
user's own, so a role may name an agent file (``./my-agent.toml``), which a
task may not. A task seen with the run's scenes is :func:`benchflow.scenes.plan.with_run_scenes`.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchflow.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunRole(_Strict):
    name: str = Field(min_length=1)
    agent: str = Field(min_length=1)
    model: str | None = None
    reasoning_effort: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    timeout_sec: int | None = Field(None, gt=0)
    idle_timeout_sec: int | None = Field(None, gt=0)
    skills_dir: str | None = None


class RunTurn(_Strict):
    role: str
    prompt: str | None = None


class RunScene(_Strict):
    name: str | None = None
    roles: list[RunRole] = Field(min_length=1)
    turns: list[str | RunTurn] = Field(default_factory=list)
    skills_dir: str | None = None


def parse_run_scenes(source: str, value: Any) -> list[dict[str, Any]]:
    """The run config's ``scenes``, checked and normalized.

    Raises:
        ConfigError: not a list of scenes, an unknown key, or a turn naming a role the scene lacks.
    """
    if not isinstance(value, list):
        raise ConfigError(f"{source}: scenes: expected a list of scenes, got {value!r}")
    out = []
    for i, raw in enumerate(value):
        try:
            scene = RunScene.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ConfigError(f"{source}: scenes[{i}].{where}: {err['msg']}") from None
        names = [r.name for r in scene.roles]
        turns = [{"role": t, "prompt": None} if isinstance(t, str) else t.model_dump() for t in scene.turns]
        for turn in turns:
            if turn["role"] not in names:
                raise ConfigError(f"{source}: scenes[{i}]: a turn names role '{turn['role']}' that the scene's "
                                  f"roles ({', '.join(names)}) do not declare; add it to the scene's roles")
        out.append({"name": scene.name or f"scene-{i}", "skills_dir": scene.skills_dir,
                    "roles": [r.model_dump(exclude_none=True) for r in scene.roles],
                    "turns": turns or [{"role": n, "prompt": None} for n in names]})
    return out
