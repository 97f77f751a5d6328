"""``bench embodied check-spec``: an embodiment spec checked, with the first problem in one line.

An embodiment spec says what a robot senses, how it is commanded and what skills it has (spec_version 1, the
schema of BenchFlow 0.7's ``benchflow.embodied.spec``; docs/embodied.md). The file is the spec itself, a saved
``robo info --json`` answer (``{"ok": true, "result": {"embodiment": …}}``) or an episode record's
``episode.json``: the spec inside is the one checked. Unknown keys in a part of the spec are refused, except a
camera's calibration (``fx``, ``projection``, …) and a safety envelope's, which are descriptive; keys at the top
of the spec or of its sensors are read past, as BenchFlow 0.7 did, and named in a note.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from benchflow.errors import ConfigError

KINDS = ("arm", "bimanual", "hand", "mobile_manipulator", "quadruped", "humanoid", "drone", "vehicle",
         "skill_only", "other")
MODES = ("sim", "real", "hil-mock")
HOLD_POLICIES = ("zero", "last", "value")
ARG_TYPES = ("float", "int", "str", "bool", "object", "enum")
SKILL_IMPLS = ("builtin", "backend")
MAX_SPEC_BYTES = 4 << 20


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ActionGroup(_Closed):
    """A named slice of the flat action vector."""

    name: str
    components: list[str]
    low: list[float]
    high: list[float]
    mode: str
    units: str = ""
    frame: str = ""
    hold: str = "zero"
    initial: list[float] | None = None
    hold_value: list[float] | None = None
    doc: str = ""
    dim: int | None = None
    """Written by ``robo info``: the number of components."""


class Camera(BaseModel):
    model_config = ConfigDict(extra="allow")  # calibration: fx, fy, cx, cy, fovy_deg, position, rotation, projection

    name: str
    mount: str = "world"
    width: int | None = None
    height: int | None = None
    calibrated: bool = True
    doc: str = ""


class SensorField(_Closed):
    name: str
    shape: list[int] = Field(default_factory=list)
    units: str = ""
    frame: str = ""
    privileged: bool = False
    doc: str = ""


class Sensors(BaseModel):
    model_config = ConfigDict(extra="allow")  # read past, as BenchFlow 0.7 did; named in a note

    cameras: list[Camera] = Field(default_factory=list)
    proprioception: list[SensorField] = Field(default_factory=list)
    state: list[SensorField] = Field(default_factory=list)


class SkillArg(_Closed):
    name: str
    type: str = "float"
    units: str = ""
    optional: bool = False
    default: Any = None
    choices: list[Any] | None = None
    doc: str = ""


class Skill(_Closed):
    name: str
    args: list[SkillArg] = Field(default_factory=list)
    doc: str = ""
    preconditions: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)
    impl: str = "backend"
    binds: dict[str, str] = Field(default_factory=dict)


class Budgets(_Closed):
    max_steps: int = 500
    max_wall_s: float | None = None
    max_repeat: int = 50
    max_skill_steps: int = 150
    settle_steps: int = 10


class RewardSpec(_Closed):
    dense: str = "sparse"
    success_mode: str = "final"


class Embodiment(BaseModel):
    model_config = ConfigDict(extra="allow")  # read past, as BenchFlow 0.7 did; named in a note

    name: str
    kind: str
    action_groups: list[ActionGroup] = Field(default_factory=list)
    sensors: Sensors = Field(default_factory=Sensors)
    skills: list[Skill] = Field(default_factory=list)
    budgets: Budgets = Field(default_factory=Budgets)
    reward: RewardSpec = Field(default_factory=RewardSpec)
    step_s: float | None = None
    doc: str = ""
    spec_version: str | int = "1"
    mode: str = "sim"
    safety: dict[str, Any] | None = None
    """A real or hardware-in-the-loop robot's safety envelope (joint_limits, workspace, estop, attended, …)."""


@dataclass(frozen=True)
class SpecSummary:
    name: str
    kind: str
    mode: str
    groups: int
    dim: int
    skills: int
    ignored: list[str]
    """Keys of the spec (or its sensors) this schema does not know: read past, not checked."""

    def line(self) -> str:
        return (f"ok: {self.name} ({self.kind}, {self.mode}), {self.groups} action group(s), dim {self.dim}, "
                f"{self.skills} skill(s)")


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the spec"


def _problem(spec: Embodiment) -> str | None:
    """The first structural problem, as ``field: what is wrong; the fix``; None for a valid spec."""
    if not spec.name:
        return "name: empty; give the robot a name"
    if spec.kind not in KINDS:
        return f"kind: {spec.kind!r} is not a kind; use one of {', '.join(KINDS)}"
    if spec.mode not in MODES:
        return f"mode: {spec.mode!r} is not a mode; use one of {', '.join(MODES)}"
    if spec.mode != "sim" and spec.safety is None:
        return f"safety: a {spec.mode} embodiment must declare its safety envelope; add a safety block"
    names: set[str] = set()
    for i, group in enumerate(spec.action_groups):
        at, dim = f"action_groups[{i}] ({group.name})", len(group.components)
        if not group.name or group.name in names:
            return f"action_groups[{i}].name: {group.name!r} is empty or used twice; give each group its own name"
        names.add(group.name)
        if dim == 0:
            return f"{at}.components: empty; name each component of the group"
        if group.dim is not None and group.dim != dim:
            return f"{at}.dim: {group.dim}, but it has {dim} component(s); drop dim or make it {dim}"
        for key in ("low", "high", "initial", "hold_value"):
            values = getattr(group, key)
            if values is not None and len(values) != dim:
                return f"{at}.{key}: {len(values)} value(s); give one per component ({dim})"
        if any(lo > hi for lo, hi in zip(group.low, group.high)):
            return f"{at}: a low bound is above its high bound; swap them"
        if group.hold not in HOLD_POLICIES:
            return f"{at}.hold: {group.hold!r}; use one of {', '.join(HOLD_POLICIES)}"
        if group.hold == "value" and group.hold_value is None:
            return f"{at}.hold_value: hold 'value' needs the command that holds still; add hold_value"
        if not group.mode:
            return f"{at}.mode: empty; give the control mode (e.g. ee_delta_pos, joint_pos, gripper)"
    if not spec.action_groups and not spec.skills:
        return "action_groups: a robot needs at least one action group or skill; add one"
    skill_names: set[str] = set()
    for i, skill in enumerate(spec.skills):
        at = f"skills[{i}] ({skill.name})"
        for name in (skill.name, *skill.aliases):
            if name in skill_names:
                return f"{at}: the name or alias {name!r} is used twice; give each skill its own names"
            skill_names.add(name)
        if skill.impl not in SKILL_IMPLS:
            return f"{at}.impl: {skill.impl!r}; use one of {', '.join(SKILL_IMPLS)}"
        for arg in skill.args:
            if arg.type not in ARG_TYPES:
                return f"{at}.args ({arg.name}).type: {arg.type!r}; use one of {', '.join(ARG_TYPES)}"
            if arg.type == "enum" and not arg.choices:
                return f"{at}.args ({arg.name}): an enum needs choices; add them"
        for role, group_name in skill.binds.items():
            if group_name not in names:
                return f"{at}.binds.{role}: no action group {group_name!r}; bind one of {', '.join(sorted(names))}"
    cameras = [c.name for c in spec.sensors.cameras]
    if len(cameras) != len(set(cameras)):
        return "sensors.cameras: a camera name is used twice; give each camera its own name"
    if spec.budgets.max_steps < 1 or spec.budgets.max_repeat < 1:
        return "budgets: max_steps and max_repeat must be at least 1"
    if spec.reward.dense not in ("shaped", "sparse"):
        return f"reward.dense: {spec.reward.dense!r}; use shaped or sparse"
    if spec.reward.success_mode not in ("final", "first"):
        return f"reward.success_mode: {spec.reward.success_mode!r}; use final or first"
    return None


def _unwrap(data: Any) -> Any:
    """The spec inside a ``robo info --json`` answer or an ``episode.json``, else ``data`` itself."""
    if isinstance(data, dict) and isinstance(data.get("result"), dict):
        data = data["result"]
    if isinstance(data, dict) and isinstance(data.get("embodiment"), dict):
        data = data["embodiment"]
    return data


def check_spec(path: Path) -> SpecSummary:
    """Read and check the spec at ``path``.

    Raises:
        ConfigError: the file cannot be read, is not JSON, or the spec is invalid (one line: file, field, fix).
    """
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc}); give an embodiment spec JSON file") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_SPEC_BYTES >> 20} MiB; give an embodiment spec JSON file")
    try:
        data = _unwrap(json.loads(raw))
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc}); give the spec as JSON (e.g. robo info --json)") from None
    if isinstance(data, dict) and data.get("ok") is False:
        raise ConfigError(f"{path}: a robo answer that is an error ({data.get('error')}); save a successful "
                          "robo info --json")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a JSON object; give an embodiment spec (name, kind, action_groups, …)")
    try:
        spec = Embodiment.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        fix = "remove it" if first["type"] == "extra_forbidden" else "fix the value"
        raise ConfigError(f"{path}: {_where(first['loc'])}: {first['msg']}; {fix}") from None
    problem = _problem(spec)
    if problem:
        raise ConfigError(f"{path}: {problem}")
    ignored = [*(spec.model_extra or {}), *(f"sensors.{key}" for key in spec.sensors.model_extra or {})]
    return SpecSummary(name=spec.name, kind=spec.kind, mode=spec.mode, groups=len(spec.action_groups),
                       dim=sum(len(g.components) for g in spec.action_groups), skills=len(spec.skills),
                       ignored=ignored)
