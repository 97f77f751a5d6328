"""TaskConfig: the strict schema of a task's settings (contracts §1.4).

Every model forbids unknown keys, so a misspelt key is an error rather than a
silently ignored setting. Defaults follow the reference; deprecated spellings
(``allow_internet``, ``memory: "1G"``) are folded into their modern fields.
"""

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

NetworkMode = Literal["no-network", "public", "allowlist"]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]

_PACKAGE_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$")
_HOSTNAME = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT])i?B?\s*$", re.IGNORECASE)
_SIZE_TO_MB = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


# Empty lists and dicts are plain defaults, not ``default_factory``: see ``benchflow.jobs.spec``.
class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


def _check_hosts(hosts: list[str] | None) -> list[str] | None:
    for host in hosts or []:
        if not _HOSTNAME.match(host):
            raise ValueError(f"allowed host {host!r} must be a bare lowercase hostname "
                             "(no scheme, port or path), e.g. 'pypi.org'")
    return hosts


def _absolute(path: str | None, what: str) -> str | None:
    if path is not None and not path.startswith("/"):
        raise ValueError(f"{what} must be an absolute path, e.g. '/app' (got {path!r})")
    return path


class Author(Strict):
    name: str
    email: str | None = None


class PackageInfo(Strict):
    name: str
    """``org/name``, the registry identity of the task, when the task is published as a package. Published
    tasks written before that rule (SkillsBench's ``name = "Parallel TF-IDF Similarity Search"``) run as
    they are; ``bench tasks check --level publication`` asks for the ``org/name`` form (:attr:`is_package_name`)."""
    version: str = ""
    description: str = ""
    authors: list[Author] = []
    keywords: list[str] = []

    @property
    def is_package_name(self) -> bool:
        return bool(_PACKAGE_NAME.match(self.name)) and ".." not in self.name


class AgentConfig(Strict):
    prompt_prefix: str | None = None
    """Prepended to the instruction as ``prefix + "\\n\\n" + prompt``."""
    timeout_sec: Seconds | None = None
    """Wall-clock cap of the agent phase; unset means no cap unless the run passes one."""
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None

    @field_validator("prompt_prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("prompt_prefix must not be blank; remove it or write the prefix")
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: list[str] | None) -> list[str] | None:
        return _check_hosts(value)


class JudgeConfig(Strict):
    model: str = "claude-sonnet-4-6"
    rubric_path: str = "tests/rubric.toml"
    input_dir: str = "/app"
    input_type: str = "deliverables"
    context: str = ""


class MemoryConfig(Strict):
    expected_skills: list[str] | None = None


class HardeningConfig(Strict):
    cleanup_conftests: bool = True


class HealthcheckConfig(Strict):
    command: str
    interval_sec: Seconds = 5
    timeout_sec: Seconds = 30
    start_period_sec: float = Field(0, ge=0)
    start_interval_sec: Seconds = 5
    retries: int = Field(3, ge=0)


class TpuConfig(Strict):
    type: str
    topology: str = "2x4"


class SetupCommand(Strict):
    command: str = Field(min_length=1)
    timeout_sec: Seconds = 600
    cwd: str | None = None
    env: dict[str, str] = {}
    user: str | int | None = None
    service: str = "main"
    host_lock: str | bool | None = None
    capture_dir: str | None = None
    capture_dir_b64_env: str | None = None
    capture_dir_b64_env_file_var: str | None = None

    @model_validator(mode="after")
    def _paths(self) -> "SetupCommand":
        _absolute(self.cwd, "setup_commands[].cwd")
        _absolute(self.capture_dir, "setup_commands[].capture_dir")
        if (self.capture_dir is None) != (self.capture_dir_b64_env is None):
            raise ValueError("capture_dir and capture_dir_b64_env must be set together")
        if self.capture_dir_b64_env is not None and not _ENV_NAME.match(self.capture_dir_b64_env):
            raise ValueError("capture_dir_b64_env must be an environment variable name like CAPTURE_B64")
        return self


class McpServer(Strict):
    name: str
    transport: Literal["sse", "stdio", "streamable-http"] = "stdio"
    url: str | None = None
    command: str | None = None
    args: list[str] = []
    cwd: str | None = None
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    tools: list[str] | None = None
    include_tags: list[str] | None = None
    exclude_tags: list[str] | None = None

    @field_validator("transport", mode="before")
    @classmethod
    def _http(cls, value: Any) -> Any:
        return "streamable-http" if value == "http" else value

    @model_validator(mode="after")
    def _endpoint(self) -> "McpServer":
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"mcp server {self.name!r} uses stdio and needs 'command'")
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"mcp server {self.name!r} uses {self.transport} and needs 'url'")
        return self


def _size_mb(value: Any, key: str) -> int:
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"sandbox.{key} {value!r} must look like '512M' or '2G'; "
                         f"better: use {key}_mb with a number of megabytes")
    return max(1, int(float(match.group(1)) * _SIZE_TO_MB[match.group(2).upper()]))


class SandboxConfig(Strict):
    network_mode: NetworkMode = "public"
    allowed_hosts: list[str] | None = None
    build_timeout_sec: Seconds = 600.0
    docker_image: str | None = Field(None, validation_alias=AliasChoices("docker_image", "image"))
    os: Literal["linux", "windows"] = "linux"
    cpus: float = Field(1, gt=0, allow_inf_nan=False)
    memory_mb: int = Field(2048, gt=0)
    storage_mb: int = Field(10240, gt=0)
    gpus: int = Field(0, ge=0)
    gpu_types: list[str] | None = None
    mcp_servers: list[McpServer] = []
    env: dict[str, str] = {}
    tpu: TpuConfig | None = None
    skills_dir: str | None = None
    healthcheck: HealthcheckConfig | None = None
    workdir: str | None = None
    setup_commands: list[SetupCommand] = []
    bugswarm_image_tag: str | None = None
    allow_cloud_metadata: bool = False
    """Let the agent reach cloud metadata endpoints under an open network (no block; recorded per trial)."""

    @model_validator(mode="before")
    @classmethod
    def _deprecated(cls, data: Any) -> Any:
        """Fold ``allow_internet`` and ``memory``/``storage`` strings into the modern fields."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "allow_internet" in data:
            allow = data.pop("allow_internet")
            if allow is False:
                explicit = data.get("network_mode")
                if explicit not in (None, "no-network"):
                    raise ValueError(f"allow_internet = false contradicts network_mode = {explicit!r}; "
                                     "remove allow_internet and keep network_mode")
                data["network_mode"] = "no-network"
            elif allow is not True:
                raise ValueError("allow_internet must be true or false (better: use network_mode)")
        for key in ("memory", "storage"):
            if key in data:
                raw = data.pop(key)
                data.setdefault(f"{key}_mb", _size_mb(raw, key))
        return data

    @model_validator(mode="after")
    def _network(self) -> "SandboxConfig":
        _check_hosts(self.allowed_hosts)
        if self.network_mode == "allowlist" and not self.allowed_hosts:
            raise ValueError("network_mode 'allowlist' needs a non-empty allowed_hosts list, "
                             "e.g. allowed_hosts: [pypi.org]")
        if self.allowed_hosts and self.network_mode != "allowlist":
            raise ValueError("allowed_hosts is only used with network_mode 'allowlist'; "
                             "set network_mode: allowlist or remove allowed_hosts")
        _absolute(self.workdir, "sandbox.workdir")
        if self.workdir is not None and self.workdir.rstrip("/") == "":
            raise ValueError("sandbox.workdir must not be '/'; use a folder such as '/app'")
        return self


class VerifierConfig(Strict):
    type: Literal["test-script", "llm-judge"] = "test-script"
    timeout_sec: Seconds = 600.0
    env: dict[str, str] = {}
    """Values may read ``${VAR}`` / ``${VAR:-default}`` from the host at run time."""
    reward_range: tuple[float, float] | None = None
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None
    sandbox_mode: Literal["shared", "separate"] | None = None
    sandbox: SandboxConfig | None = None
    service: str = "main"
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    hardening: HardeningConfig = Field(default_factory=HardeningConfig)
    pytest_plugins: list[str] = []

    @field_validator("reward_range")
    @classmethod
    def _range(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is None:
            return None
        lo, hi = value
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > 0 or hi < 1 or lo >= hi:
            raise ValueError(f"reward_range {list(value)} may only widen [0, 1]: "
                             "use [lo, hi] with lo <= 0 < 1 <= hi, e.g. [-1, 1]")
        return value

    @model_validator(mode="after")
    def _modes(self) -> "VerifierConfig":
        _check_hosts(self.allowed_hosts)
        if self.sandbox_mode == "shared" and self.sandbox is not None:
            raise ValueError("verifier.sandbox_mode 'shared' cannot have a verifier.sandbox; "
                             "use sandbox_mode 'separate' or remove verifier.sandbox")
        return self


class OracleConfig(Strict):
    env: dict[str, str] = {}
    timeout_sec: Seconds | None = None

    @model_validator(mode="before")
    @classmethod
    def _fold_env(cls, data: Any) -> Any:
        """Legacy ``[solution] FOO = "..."`` keys become ``env`` entries."""
        if not isinstance(data, dict):
            return data
        loose = {k: v for k, v in data.items() if k not in ("env", "timeout_sec") and _ENV_NAME.match(str(k))}
        if not loose:
            return data
        rest = {k: v for k, v in data.items() if k not in loose}
        rest["env"] = {**loose, **dict(rest.get("env") or {})}
        return rest


class ArtifactSpec(Strict):
    source: str
    destination: str | None = None
    exclude: list[str] = []


class StepConfig(Strict):
    name: str
    agent: AgentConfig | None = None
    verifier: VerifierConfig | None = None
    min_reward: float | None = None
    healthcheck: HealthcheckConfig | None = None
    artifacts: list[str | ArtifactSpec] = []


class TaskConfig(Strict):
    schema_version: str = "1.3"
    task: PackageInfo | None = None
    metadata: dict[str, Any] = {}
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    oracle: OracleConfig = Field(default_factory=OracleConfig,
                                 validation_alias=AliasChoices("oracle", "solution"))
    source: str | None = None
    reward: dict[str, Any] = {}
    artifacts: list[str | ArtifactSpec] = []
    steps: list[StepConfig] | None = None
    multi_step_reward_strategy: Literal["mean", "final"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "oracle" in data and "solution" in data:
            raise ValueError("both 'oracle' and 'solution' are set; keep only 'oracle'")
        if "version" in data:
            data.setdefault("schema_version", data["version"])
            data.pop("version")
        if isinstance(data.get("schema_version"), (int, float)):
            data["schema_version"] = str(data["schema_version"])
        return data

    @field_validator("schema_version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not re.fullmatch(r"\d+\.\d+", value):
            raise ValueError(f"schema_version {value!r} must be MAJOR.MINOR, e.g. '1.3'")
        if value.split(".")[0] != "1":
            raise ValueError(f"schema_version {value!r} is not supported; this build reads major version 1")
        return value


CONFIG_KEYS = frozenset(TaskConfig.model_fields) | {"version", "solution"}
"""Top-level keys of a task's settings, including their input aliases."""
