"""RunSpec: the whole run, from flags, a ``--config`` YAML, or the Python API.

A run config is the whole run; flags win over its keys. Secret-looking
``agent_env`` values are never written anywhere (see ``redacted()``).
"""

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from benchflow.util.redact import drop_secrets

from .extensions import PARSED_FIELDS, hooks, parse_field
from .feature_settings import (
    CheckpointSettings,
    ReviewSettings,
    SkillSettings,
    VerifierSettings,
    WorkerSettings,
    lift_legacy,
)

_USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
ROOT_USER_NAMES = frozenset({"null", "none", "root", ""})
"""``--sandbox-user`` values that mean the agent runs as root."""


# Empty lists and dicts are plain defaults (pydantic copies them for each instance), not
# ``default_factory=list``: for a factory pydantic reads its signature, and a builtin's makes
# ``inspect`` compile tokenize's patterns (~2 ms before ``bench run`` starts its first container).
class Selection(BaseModel):
    """Which tasks run."""

    model_config = ConfigDict(extra="forbid")

    include: list[str] = []
    """Names or globs to keep (empty: all)."""
    exclude: list[str] = []
    limit: int | None = Field(default=None, ge=1)
    """Run at most N tasks: the first N by name, or a seeded sample with ``sample_seed``."""
    sample_seed: int | None = None
    expected_tasks: int | None = Field(default=None, ge=0)


class Budget(BaseModel):
    """Job-wide and per-trial budgets."""

    model_config = ConfigDict(extra="forbid")

    max_rollouts: int | None = Field(default=None, ge=1)
    max_sandbox_seconds: float | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, ge=1)
    token_budget: int | None = Field(default=None, ge=1)
    turn_budget: int | None = Field(default=None, ge=1)


class Retry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(default=2, ge=0)
    """Retries per trial after a retryable failure."""
    policy: Literal["default", "unscored-only"] = "default"
    concurrency: int | None = Field(default=None, ge=1)
    """At most this many retry attempts run at once (first attempts never wait for one); None: no cap
    beyond ``RunSpec.concurrency``. With worker shards the cap is shared by every worker."""


class Gates(BaseModel):
    """What makes the run exit 1."""

    model_config = ConfigDict(extra="forbid")

    fail_under: float | None = Field(default=None, ge=0, le=1)
    fail_on: list[Literal["timeout", "error", "verifier-error"]] = []


class RunSpec(BaseModel):
    """Everything one ``bench run`` needs."""

    model_config = ConfigDict(extra="forbid")

    targets: list[str] = []
    """Task folders or folders of tasks."""
    tasks_dir: str | None = None
    dataset: str | None = None
    """``name@version`` (or ``org/name@version``) from a registry, fetched and digest-checked (``benchflow.datasets``)."""
    registry: str | None = None
    """The registry for ``dataset``: a file, a URL or ``hub:<url>`` (default: BenchFlow's)."""
    hub: str | None = None
    """A BenchFlow Hub to read ``dataset`` from (= ``registry: hub:<url>``)."""
    ignore_bench_version: bool = False
    source_repo: str | None = None
    """Tasks from a git repository: ``org/repo`` (GitHub) or a git URL, with ``source_path``/``source_ref``."""
    source_path: str | None = None
    source_ref: str | None = None
    source_env: str | None = None
    """A hosted environment as ``owner/name[@version]`` (Prime Intellect's Environments Hub), installed in a
    venv of its own and run by verifiers: each rollout is a trial (``benchflow.hosted``, docs/hosted-environments.md)."""
    source_env_version: str | None = None
    source_env_args: dict[str, Any] = {}
    """``load_environment`` keyword arguments (``--source-env-arg KEY=VALUE``, values read as JSON when they parse)."""
    source_env_num_examples: int = Field(default=1, ge=1)
    source_env_rollouts_per_example: int = Field(default=1, ge=1)
    source_env_max_tokens: int = Field(default=1024, ge=1)
    source_env_temperature: float | None = Field(default=None, ge=0)
    """None: no temperature is sent (the provider's own)."""
    source_env_sampling_args: dict[str, Any] = {}
    source_env_verifiers_version: str | None = None
    """Pin the verifiers release installed beside the environment (None: the package's own requirement)."""
    source_env_base_url: str | None = None
    """The model endpoint (None: verifiers' own default)."""
    source_env_api_key_var: str | None = None
    """The name of the variable holding that endpoint's key; the value is read from the environment only."""
    agent: str = "oracle"
    model: str | None = None
    reasoning_effort: str | None = None
    harness: Literal["acp", "native"] = "acp"
    agent_env: dict[str, str] = {}
    allow_task_env: list[str] = []
    """Host variables tasks may read through ``${NAME}`` (names only; the values are secrets of the run)."""
    prompts: list[str] = []
    """Prompts to send; ``@instruction`` is the task prompt (default: the task prompt alone)."""
    scenes: list[dict[str, Any]] | None = None
    """A run config's ``scenes`` (normalized by the ``scenes`` feature's ``parse_config``): they replace each task's.
    The scenes feature's one setting, so a field rather than a section."""
    extra_instruction: str | None = None
    sandbox: str | None = None
    """Backend name; None picks docker when an engine answers, else local."""
    sandbox_user: str | None = "agent"
    concurrency: int = Field(default=4, ge=1)
    warm_pool: int | None = Field(default=None, ge=0)
    build_concurrency: int | None = Field(default=None, ge=1)
    executor: str = "in-process"
    """Where each attempt runs: ``in-process``, or as a task on a Ray cluster: ``ray`` ($RAY_ADDRESS,
    the cluster ``ray start`` made on this machine, else a new local one) or ``ray://HOST:PORT``
    (Ray Client); see ``benchflow.executors`` and docs/ray.md. The executors feature's one setting (read by
    its ``parse_field``), so a field rather than a section."""
    jobs_dir: str = "jobs"
    job_name: str | None = None
    fresh: bool = False
    restart_changed: bool = False
    timeout_multiplier: float = Field(default=1.0, gt=0)
    agent_idle_timeout_sec: float | None = Field(default=None, ge=0)
    """None: the default (10 min, 30 at effort xhigh/max); 0: no idle watchdog."""
    freeze_workspace: bool = False
    keep_sandbox: Literal["never", "on-failure", "always"] = "never"
    sandbox_setup_timeout_sec: float | None = Field(default=None, gt=0)
    """How long the sandbox user's setup inside a started sandbox may take (None: the backend's default, 120 s)."""
    base_image_override: str | None = None
    fresh_install: bool = False
    """Install the agent in every trial instead of starting from its cached image layer."""
    allow_cloud_metadata: bool = False
    """Let the agent reach cloud metadata endpoints under an open network (no block; recorded per trial)."""
    capture_tokens: bool = False
    """Ask OpenAI-compatible upstreams (vLLM, SGLang) for token ids and logprobs and record them per
    call (``token_capture`` in llm_trajectory.jsonl), without the agent knowing."""
    host_login: bool = False
    """Copy this machine's subscription login (e.g. ``~/.claude``) into the sandbox for agents
    with no API key. Off by default: a sandbox gets no host credential."""
    usage_tracking: Literal["auto", "required", "off"] = "auto"
    """``required``: a trial whose model calls carried no trusted usage fails."""
    ca_bundle: str | None = None
    """CA bundle to trust inside builds and sandboxes; ``host`` = this machine's bundle."""
    config_override: dict[str, Any] | None = None
    """A patch deep-merged into each task's resolved config (any TaskConfig section but its identity:
    ``OVERRIDE_REFUSED``); recorded in every trial's config.json by content hash."""
    # Each feature's own section (jobs/feature_settings.py), checked by that feature's ``check_spec``.
    checkpoints: CheckpointSettings = Field(default_factory=CheckpointSettings)
    """``--checkpoints``, ``--checkpoint-keep``, ``--retry-from-checkpoint`` … (``benchflow.branch``)."""
    skills: SkillSettings = Field(default_factory=SkillSettings)
    """``--skill-mode``, ``--skills-dir``, ``--skill-creator-dir``, ``--task-skills`` (``benchflow.skills``)."""
    verifier: VerifierSettings = Field(default_factory=VerifierSettings)
    """``--verifier-sandbox``, ``--separate-verifier-include`` (``benchflow.separate_verifier``)."""
    workers: WorkerSettings = Field(default_factory=WorkerSettings)
    """``--worker-concurrency``, ``--worker-retries``, ``--worker-start-stagger-sec`` (``benchflow.shards``)."""
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    """``--integrity``, ``--reviewer-*`` (``benchflow.review``)."""
    selection: Selection = Field(default_factory=Selection)
    budget: Budget = Field(default_factory=Budget)
    retry: Retry = Field(default_factory=Retry)
    gates: Gates = Field(default_factory=Gates)
    trials: int = Field(default=1, ge=1)
    seeds: list[int] | None = None
    """Run every task once per seed (``BENCHFLOW_SEED`` is set for the agent and the verifier)."""
    matrix: str | None = None
    quiet: bool = False
    accept_deviations: str | None = None
    task_manifest_out: str | None = None
    run_config_out: str | None = None
    summary_out: str | None = None
    health_summary_out: str | None = None
    """Write the rollouts' health summary JSON here (``jobs/canonical.py``)."""
    canonicalize: Literal["none", "one-healthy-per-task"] = "none"
    """``one-healthy-per-task``: select each task's best rollout for training (``canonical-selection.json``)."""
    canonical_selection_out: str | None = None
    """Where the selection goes (default ``<job>/canonical-selection.json``); needs ``canonicalize``."""
    canonical_jobs_dir: str | None = None
    """Copy the selected trial folders here, one job folder for ``bench train convert``; needs ``canonicalize``."""

    # --- Run flags of issue #34, one block per feature (loop/, environment_plane/, context_root/,
    # codex_apps/): one or two settings each, a field of their own like ``executor``; each feature parses and
    # checks its own. ``--self-gen-no-internet`` is the skills section's ``no_internet``.
    loop_strategy: str | None = None
    """``single-shot``, ``verify-retry[:k=N,feedback=none|counts|names|raw]`` or ``self-review[:k=N]``, kept in
    its canonical spelling (``benchflow.loop.strategy``); None: single-shot."""
    environment_manifest: str | None = None
    """A stateful environment bound to every trial: an ``environment.toml`` path or a ``name@version`` of the
    environment registry (``benchflow.environment_plane``)."""
    state: str | None = None
    """The same as ``environment_manifest``, or inline JSON ``{"name": ..., "tools": [...]}`` choosing a subset of
    its services; wins over ``environment_manifest``."""
    context_root: str | None = None
    """The repository root a task's Dockerfile ``COPY`` sources are relative to (``benchflow.context_root``)."""
    codex_apps_policy: Literal["disabled", "inherit"] | None = None
    """Codex account Apps for codex-acp trials: disabled (the default for scored tasks) or inherit
    (``benchflow.codex_apps``)."""

    @model_validator(mode="before")
    @classmethod
    def _flat_keys(cls, data: Any) -> Any:
        """A run config stored before the feature sections: its flat keys (``checkpoint_keep``) moved into them."""
        return lift_legacy(data) if isinstance(data, dict) else data

    @field_validator(*(name for name in PARSED_FIELDS if "." not in name), mode="before")
    @classmethod
    def _feature_field(cls, value: Any, info: Any) -> Any:
        """A feature's own setting as that feature reads it (``--executor``; a section's: ``FeatureSettings``)."""
        return parse_field(info.field_name, value)

    @field_validator("config_override")
    @classmethod
    def _override_keys(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value:
            value = {OVERRIDE_ALIASES.get(key, key): patch for key, patch in value.items()}
            check_override_keys(value)
        return value

    @field_validator("agent_env")
    @classmethod
    def _env_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key or "=" in key:
                raise ValueError(f"agent env name {key!r} is not a variable name")
        return value

    @field_validator("sandbox_user")
    @classmethod
    def _user_name(cls, value: str | None) -> str | None:
        if value is not None and not _USER_NAME.match(value):
            raise ValueError(f"--sandbox-user {value!r}: give a user name (lowercase letters, digits, '_' or '-', "
                             "e.g. agent), or root")
        return value

    @field_validator("allow_task_env")
    @classmethod
    def _allowed_names(cls, value: list[str]) -> list[str]:
        from benchflow.tasks.task_env import check_names

        return check_names(value)

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, value: Any) -> Any:
        return parse_seeds(value) if isinstance(value, (str, int)) else value

    @model_validator(mode="after")
    def _one_source(self) -> "RunSpec":
        if not self.dataset:
            for flag, value in (("--registry", self.registry), ("--hub", self.hub),
                                ("--ignore-bench-version", self.ignore_bench_version)):
                if value:
                    raise ValueError(f"{flag} is only valid with --dataset")
        if not self.source_repo and (self.source_path or self.source_ref):
            raise ValueError("--source-path and --source-ref are only valid with --source-repo")
        if not self.source_env:
            for name, field in type(self).model_fields.items():
                if name.startswith("source_env_") and getattr(self, name) != field.default:
                    flag = "--" + name.replace("_", "-")
                    raise ValueError(f"{flag[:-1] if flag.endswith('-args') else flag} is only valid with --source-env")
        given = [name for name, value in (("a target", self.targets), ("--dataset", self.dataset),
                                          ("--source-repo", self.source_repo), ("--source-env", self.source_env))
                 if value]  # each beats tasks_dir
        if len(given) > 1:
            raise ValueError(f"{given[0]} and {given[1]} both name the tasks; give one")
        return self

    @model_validator(mode="after")
    def _canonical_outputs_need_policy(self) -> "RunSpec":
        if self.canonicalize == "none":
            for flag, value in (("--canonical-selection-out", self.canonical_selection_out),
                                ("--canonical-jobs-dir", self.canonical_jobs_dir)):
                if value:
                    raise ValueError(f"{flag} needs --canonicalize one-healthy-per-task")
        return self

    @model_validator(mode="after")
    def _features(self) -> "RunSpec":
        for check in hooks(self, "check_spec"):  # each feature's settings, checked by that feature
            check(self)
        return self

    def redacted(self) -> dict[str, Any]:
        """The spec as stored on disk: secret-looking agent env values dropped."""
        data = self.model_dump(mode="json")
        data["agent_env"] = drop_secrets(self.agent_env)
        reviewer = self.review.reviewer
        if reviewer and isinstance(reviewer.get("agent_env"), dict):
            data["review"]["reviewer"] = {**reviewer, "agent_env": drop_secrets(reviewer["agent_env"])}
        if self.scenes:  # a run config's role env may hold keys too
            data["scenes"] = [{**scene, "roles": [{**role, "env": drop_secrets(role.get("env"))}
                                                  for role in scene["roles"]]} for scene in self.scenes]
        return data

    @property
    def effective_warm_pool(self) -> int:
        if self.warm_pool is not None:
            return min(self.warm_pool, self.concurrency)
        return 0 if self.concurrency == 1 else 1

    def override_record(self) -> dict[str, Any] | None:
        """``config_override`` as recorded in config.json: keys, content hash, patch."""
        if not self.config_override:
            return None
        canonical = json.dumps(self.config_override, sort_keys=True, separators=(",", ":"))
        return {"keys": sorted(self.config_override), "sha256": "sha256:" + hashlib.sha256(canonical.encode()).hexdigest(),
                "patch": self.config_override}


OVERRIDE_REFUSED = {
    "schema_version": "it is the task file's format version, read before any patch applies",
    "task": "it names the task (name, version, authors); a run cannot make a task another one",
    "source": "it records where the task came from; a run cannot change its provenance",
    **dict.fromkeys(("verifier", "reward", "steps", "multi_step_reward_strategy"),
                    "it decides how the task is scored, which a run's patch must not change (contracts §7.5): "
                    "a score would no longer be the task's; change the task itself (a copy) instead"),
}
"""Task config sections ``--config-override`` cannot patch, and why."""


OVERRIDE_ALIASES = {"environment": "sandbox", "solution": "oracle"}
"""A task.toml's (Harbor's) section names, patched as the sections they load into."""


def check_override_keys(patch: dict[str, Any]) -> None:
    """Every top-level key of ``patch`` is a task config section a run may patch.

    Raises:
        ValueError: names the first key that is not, and what to do.
    """
    from benchflow.tasks.config import TaskConfig

    sections = sorted(set(TaskConfig.model_fields) - set(OVERRIDE_REFUSED))
    for key in sorted(patch):
        if key in OVERRIDE_REFUSED:
            raise ValueError(f"--config-override cannot patch {key}: {OVERRIDE_REFUSED[key]}")
        if key not in sections:
            raise ValueError(f"--config-override: {key!r} is not a task config section; patch one of "
                             f"{', '.join(sections)}")


def agent_user(flag: str) -> str | None:
    """``--sandbox-user``'s value as a RunSpec field: root (also null, none or empty) is None."""
    return None if flag in ROOT_USER_NAMES else flag


def parse_seeds(text: str | int) -> list[int]:
    """``0-4`` -> [0..4]; ``0,3,7`` -> [0, 3, 7]."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part[1:]:
            lo, hi = part.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ValueError(f"--seeds {text!r}: give a range like 0-4 or a list like 0,3,7")
            out.extend(range(int(lo), int(hi) + 1))
        elif part.isdigit():
            out.append(int(part))
        else:
            raise ValueError(f"--seeds {text!r}: give a range like 0-4 or a list like 0,3,7")
    if not out:
        raise ValueError(f"--seeds {text!r}: no seed given")
    return sorted(set(out))
