"""Each run feature's own section of ``RunSpec`` (``spec.checkpoints.after``, ``spec.skills.mode``, …), and the
flat keys those settings had before.

The sections live in the engine so that a ``RunSpec`` is built, dumped, sent to a worker and read back without
importing a feature: ``bench run`` imports a feature only for a run that uses it (``jobs.extensions``). Here
pydantic checks each setting's type and range; what the settings mean together — a retry without checkpoints,
a skill mode without its folder — is checked by the feature that owns the section, in its ``check_spec`` hook
(``branch/feature.py``, ``skills/feature.py``, ``separate_verifier/feature.py``, ``review/feature.py``).

A run config stored before the sections (an old job folder's ``evaluation.json``, a shard worker's message, a
``run-reference.toml``) has the flat keys of :data:`LEGACY_KEYS`; :func:`lift_legacy` moves them into their
sections as ``RunSpec`` is read, as Inspect upgrades an older ``EvalLog``. A run config YAML and ``bf.run``'s
keywords keep the flat keys of the contracts (§7.1): ``jobs/config_file.py`` maps them onto the sections.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .extensions import parse_field

# No base class and one validator only: each model and validator pydantic builds is time before ``bench run``
# starts its first container.


class CheckpointSettings(BaseModel):
    """``spec.checkpoints``: the checkpoints feature (``benchflow.branch``)."""

    model_config = ConfigDict(extra="forbid")

    after: list[int] | Literal["every-prompt"] | None = None
    """Keep a retained sandbox snapshot after these prompts (``every-prompt`` or ``prompt:N[,M]``);
    ``bench branch --from-checkpoint <trial>`` forks from one later."""
    keep: int = Field(default=3, ge=1)
    """At most this many checkpoints per trial; the oldest is deleted."""
    retry: Literal["on-failure", "on-timeout", "both"] | None = None
    """Fork one retry from the trial's last checkpoint when it fails / times out; the trial's reward
    is kept, the retry's reported beside it (``result.json`` ``retry``)."""
    retry_prompt: str | None = None
    """The retry's prompt (``@instruction``, ``@verifier_feedback``); None: the prompts after the checkpoint."""
    retry_resume_session: bool = False
    """The retry reloads the trial's ACP session at the checkpoint instead of starting a fresh one."""

    @field_validator("after", mode="before")
    @classmethod
    def _read_by_feature(cls, value: Any) -> Any:
        """``prompt:2`` -> ``[2]``, as the checkpoints feature reads it (its row ``parses`` the setting)."""
        return parse_field("checkpoints.after", value)


class SkillSettings(BaseModel):
    """``spec.skills``: the skills feature (``benchflow.skills.policy``)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["no-skill", "with-skill", "self-gen"] | None = None
    """None: with-skill when ``dir`` is given, else no-skill."""
    dir: str | None = None
    """A folder of skills deployed for every task (mode with-skill)."""
    creator_dir: str | None = None
    """The skill-creator skill (or a skills root holding it) for mode self-gen."""
    task_skills: bool | None = None
    """True: also deploy the task's ``environment/skills``; False: no skill of the task (not even its
    ``sandbox.skills_dir``); None: the task's ``sandbox.skills_dir`` only."""
    no_internet: bool = False
    """``--self-gen-no-internet``: with mode self-gen, the agent's web tools are turned off
    (``benchflow.skills.web_tools``)."""


class VerifierSettings(BaseModel):
    """``spec.verifier``: the separate verifier feature (``benchflow.separate_verifier``)."""

    model_config = ConfigDict(extra="forbid")

    sandbox: Literal["task", "separate"] = "task"
    """``separate``: every verifier in a fresh sandbox with only the frozen workspace and artifacts."""
    include: list[str] = []
    """Absolute paths outside the workspace a separate verifier sandbox also receives."""


class WorkerSettings(BaseModel):
    """``spec.workers``: the worker shards feature (``benchflow.shards``)."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int | None = Field(default=None, ge=1)
    """Run the trials in worker subprocesses (shards) of at most this many concurrent trials each;
    ``RunSpec.concurrency`` stays the total (workers = ceil(concurrency / this))."""
    retries: int = Field(default=1, ge=0)
    """Restart a crashed worker this many times; it resumes its shard (finished trials are kept)."""
    start_stagger_sec: float = Field(default=1.0, ge=0)
    """Seconds between worker starts."""


class ReviewSettings(BaseModel):
    """``spec.review``: the integrity audit and rubric review feature (``benchflow.review``)."""

    model_config = ConfigDict(extra="forbid")

    integrity: Literal["off", "audit", "strict"] = "off"
    """``audit``: check what each agent did against its task (``integrity/claim_verdict.json``); rewards never
    change. ``strict``: the audit, and every verifier in a separate sandbox (``verifier.sandbox``)."""
    reviewer: dict[str, Any] | None = None
    """``--reviewer-*``: rubric-review each trial of a task with a review rubric after the run
    (``benchflow.review.settings.ReviewerSettings`` fields); None: no automatic review."""


LEGACY_KEYS: dict[str, str] = {
    "checkpoints": "checkpoints.after", "checkpoint_keep": "checkpoints.keep",
    "retry_from_checkpoint": "checkpoints.retry", "retry_prompt": "checkpoints.retry_prompt",
    "retry_resume_session": "checkpoints.retry_resume_session",
    "skill_mode": "skills.mode", "skills_dir": "skills.dir", "skill_creator_dir": "skills.creator_dir",
    "task_skills": "skills.task_skills", "self_gen_no_internet": "skills.no_internet",
    "verifier_sandbox": "verifier.sandbox", "separate_verifier_include": "verifier.include",
    "worker_concurrency": "workers.concurrency", "worker_retries": "workers.retries",
    "worker_start_stagger_sec": "workers.start_stagger_sec",
    "integrity": "review.integrity", "reviewer": "review.reviewer",
}
"""The flat ``RunSpec`` field each section's setting was (the run-config key and the flag's name) -> its path."""

SECTIONS = frozenset(path.split(".")[0] for path in LEGACY_KEYS.values())
"""The ``RunSpec`` fields that are a feature's section."""

FLAT_NAMES: dict[str, str] = {path: flat for flat, path in LEGACY_KEYS.items()}
"""A section's setting -> its flat name, which run configs, ``bf.run`` and the flags still spell."""


def lift_legacy(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (``RunSpec`` fields) with the flat keys of :data:`LEGACY_KEYS` moved into their sections.

    ``checkpoints`` is both a flat key (``every-prompt``, ``[2]``, None) and a section (a mapping): only the
    former moves. A setting given in its section as well wins over the flat key."""
    lifted: dict[str, dict[str, Any]] = {}
    out = dict(data)
    for flat, path in LEGACY_KEYS.items():
        section, name = path.split(".")
        if flat not in out or (flat == section and isinstance(out[flat], (dict, BaseModel))):
            continue
        lifted.setdefault(section, {})[name] = out.pop(flat)
    for section, values in lifted.items():
        given = out.get(section)
        if isinstance(given, BaseModel):
            given = given.model_dump(exclude_unset=True)
        if given is None or isinstance(given, dict):  # else pydantic refuses the section's value
            out[section] = {**values, **(given or {})}
    return out
