"""What a scene task asks of a run, known before its sandbox starts (the planning half of :mod:`.runner`).

The run card's refusals and warnings (:func:`run_issues`; the task's own:
:func:`benchflow.tasks.scene_rules.scene_issues`), the agents a
scene's roles name (each installed as a layer, :func:`role_agents`), the ``scenes`` record of
``config.json`` (:func:`scenes_as_run`), and a task seen with a run config's scenes
(:func:`with_run_scenes`; the config's models are :mod:`.run_config`'s). Kept apart from the
turns' runner, and from those models, so that a run reaches its first container without
importing what runs the turns or building models a run without scenes never uses.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from benchflow.errors import BenchError
from benchflow.tasks.scene_rules import handoff, is_file

if TYPE_CHECKING:
    from benchflow.jobs.trial_request import TrialRequest


def wants_scenes(req: TrialRequest) -> bool:
    """The task has scenes and a real agent runs it (the oracle and nop solve or skip it as one phase)."""
    return bool(req.task.scenes) and not req.agent.is_control


def _resolved(name: str, harness: str) -> tuple[str | None, str | None]:
    """(the agent's name, None), or (None, why ``name`` does not resolve under ``harness``: the registry's line)."""
    from benchflow import agents

    try:
        return agents.resolve(name, harness=harness).name, None
    except BenchError as exc:
        return None, str(exc)


def _role_agent_issues(task: Any, spec: Any) -> list[str]:
    """A role its scenes play whose agent does not resolve: refused up front rather than at its turn."""
    issues = []
    harness = spec.harness or "acp"
    own = {spec.agent, _resolved(spec.agent, harness)[0]} if spec.agent else set()
    played = dict.fromkeys(turn["role"] for scene in task.scenes for turn in scene["turns"])
    for role in played:
        agent = str((task.roles.get(role) or {}).get("agent") or "")
        if not agent or agent in own or (is_file(agent) and not spec.scenes):
            continue  # the run's own agent, or a task role naming a file (the runtime check refuses that)
        problem = _resolved(agent, harness)[1]
        if problem:
            issues.append(f"role {role} (agent {agent}): {problem}")
    return issues


def run_issues(task: Any, spec: Any) -> tuple[list[str], list[str]]:
    """(refusals, warnings) of the run card for a scene or simulated-user task under ``spec`` (a RunSpec)."""
    if spec.agent in ("oracle", "nop"):
        return [], []
    task = with_run_scenes(task, spec.scenes)
    issues, warnings = _role_agent_issues(task, spec), []
    if task.scenes and spec.checkpoints.after:
        issues.append("--checkpoints: a scene's turns are separate sessions, which checkpoints do not "
                      "follow; leave --checkpoints out")
    if task.scenes and spec.prompts:
        warnings.append("--prompt does not apply to scene turns; each turn's prompt comes from the task")
    has_user = task.has_user
    if has_user:
        from benchflow.tasks.user_plan import user_plan

        try:
            has_user = user_plan(task) is not None
        except BenchError:
            has_user = False  # the runtime check reports it
    if has_user and spec.harness == "native":
        issues.append("user: the simulated user answers in the agent's ACP session; run with --harness acp")
    return issues, warnings


def compose(parts: dict[str, str | None], mode: str, order: list[str]) -> str:
    """The turn's prompt from its parts (see the module docstring)."""
    if mode == "append":
        return "\n\n".join(parts[p].strip() for p in order if parts.get(p))
    return next(parts[p] for p in ("turn", "scene", "role", "base") if parts.get(p))


@dataclasses.dataclass
class Turn:
    index: int
    scene: str
    role: str
    config: dict[str, Any]
    inline: str | None
    visibility: str


def turns_of(task: Any) -> list[Turn]:
    out: list[Turn] = []
    for scene in task.scenes:
        visibility = handoff(task, scene["name"])["trajectory_visibility"]
        for turn in scene["turns"]:
            cfg = dict(task.roles.get(turn["role"]) or {})
            if scene.get("skills_dir") and not cfg.get("skills_dir"):
                cfg["skills_dir"] = scene["skills_dir"]
            out.append(Turn(len(out) + 1, scene["name"], turn["role"], cfg, turn.get("prompt"), visibility))
    return out


def role_player(req: TrialRequest, role: dict[str, Any]) -> tuple[Any, str | None, str | None]:
    """(agent, model, effort) of a role: its own agent (the run's when it names the run's agent)."""
    from benchflow import agents

    name = str(role.get("agent") or req.agent.name)
    own = name == req.agent.name
    agent = req.agent if own else agents.resolve(name, harness=req.spec.harness)
    model = role.get("model") or (req.spec.model if own else None)
    effort = role.get("reasoning_effort") or (req.spec.reasoning_effort if own else None)
    return agent, model, effort


def role_agents(req: TrialRequest) -> list[Any]:
    """The other agents the roles of a scene task name (each installed as a layer of its own where the
    backend builds layers); a name that does not resolve is left to its turn to report."""
    if not wants_scenes(req):
        return []
    out: dict[str, Any] = {}
    for role in req.task.roles.values():
        name = role.get("agent")
        if name and name != req.agent.name and name not in out:
            try:
                out[name] = role_player(req, role)[0]
            except BenchError:
                continue
    return list(out.values())


def scene_record(req: TrialRequest) -> list[dict[str, Any]]:
    """``config.json`` ``scenes``: every scene with its roles as they are played and its turns."""
    return scenes_as_run(req.task, req.spec, req.agent.name)


def scenes_as_run(task: Any, spec: Any, agent_name: str) -> list[dict[str, Any]]:
    """:func:`scene_record` of ``task`` (its scenes as the run gives them) under ``spec`` with the run's agent
    ``agent_name``: also what a resumed run compares with a finished trial's record (``jobs.job.CHANGE_KEYS``)."""
    out = []
    for scene in task.scenes:
        roles = []
        for name in scene["roles"]:
            cfg = task.roles.get(name) or {}
            own = cfg.get("agent") in (None, agent_name)
            roles.append({"name": name, "agent": cfg.get("agent"),
                          "model": cfg.get("model") or (spec.model if own else None),
                          "reasoning_effort": cfg.get("reasoning_effort") or
                          (spec.reasoning_effort if own else None),
                          "timeout_sec": cfg.get("timeout_sec"), "idle_timeout_sec": cfg.get("idle_timeout_sec"),
                          "skills_dir": cfg.get("skills_dir") or scene.get("skills_dir"),
                          "capabilities": list(cfg.get("capabilities") or []),
                          "env_keys": sorted(cfg.get("env") or {})})
        out.append({"name": scene["name"], "skills_dir": scene.get("skills_dir"), "roles": roles,
                    "turns": [{"role": t["role"], "has_prompt": bool(t.get("prompt"))} for t in scene["turns"]]})
    return out


def with_run_scenes(task: Any, scenes: list[dict[str, Any]] | None) -> Any:
    """``task`` with the run's scenes in place of its own (unchanged without them)."""
    if not scenes:
        return task
    roles = {name: dict(cfg) for name, cfg in task.roles.items()}
    scene_prompts = {s["name"]: s.get("prompt") for s in task.scenes}
    own: list[dict[str, Any]] = []
    for scene in scenes:
        for role in scene["roles"]:
            base = roles.get(role["name"], {"prompt": None})
            roles[role["name"]] = {**base, **{k: v for k, v in role.items() if k != "name"}}
        own.append({"name": scene["name"], "roles": [r["name"] for r in scene["roles"]], "turns": scene["turns"],
                    "skills_dir": scene.get("skills_dir"), "prompt": scene_prompts.get(scene["name"])})
    return dataclasses.replace(task, roles=roles, scenes=own)
