"""The Agent contract: how anything that attempts a task plugs into a trial.

The trial lifecycle calls ``install`` once the sandbox has started, then
``run`` with the prompts. ``run`` writes trajectory events as they happen
(through ``ctx.trajectory``) so a timeout or crash keeps what was done; its
return value summarises the attempt. Timeouts are enforced by the agent
runtime (wall clock and idle), which records them on the outcome instead of
raising: the verifier still scores the workspace afterwards.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchflow.sandbox.base import Sandbox


@dataclass
class AgentContext:
    """Everything an agent needs for one trial."""

    task_name: str
    workdir: str
    """Workspace path inside the sandbox."""
    prompts: list[str]
    """Resolved prompts, in order (prompt_prefix applied)."""
    trial_dir: Path
    """Host folder of the trial (agent/, trajectory/ live under it)."""
    trajectory: "TrajectorySink"
    timeout_sec: float | None = None
    """Wall-clock cap for the whole agent phase (None: no cap)."""
    idle_timeout_sec: float | None = None
    model: str | None = None
    effort: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    """Agent environment (user --agent-env merged with the gateway's variables)."""
    user: str | None = "agent"
    """Sandbox user the agent process runs as (None: root)."""
    host_login: bool = False
    """``--host-login``: copy this machine's subscription login files into the sandbox when no API
    key stands in for them. Off by default, so the sandbox gets no host credential."""
    oracle_dir: str | None = None
    """In-sandbox path of the uploaded oracle (only set for the oracle)."""
    oracle_env: Mapping[str, str] = field(default_factory=dict)
    mcp_servers: list[Any] = field(default_factory=list)
    """The task's ``sandbox.mcp_servers`` (``benchflow.tasks.config.McpServer``), passed on in ACP ``session/new``."""
    log: Callable[[str], None] = lambda _msg: None
    """Progress messages for the run's heartbeat."""
    should_stop: Callable[[], str | None] = lambda: None
    """A stop the run asks for, e.g. ``"turn_budget"`` once the trial's model budget is spent: the
    agent's prompt is cancelled, it is stopped, and its work is graded (not an error)."""
    resume_session: str | None = None
    """An ACP session id to reload (``session/load``) instead of starting a new session: the
    conversation of an earlier agent phase in this sandbox (a branch child, a checkpoint retry).
    An agent that does not advertise ``loadSession`` fails the phase with the reason."""
    follow_up: Callable[[str], Awaitable[str | None]] | None = None
    """After the last prompt, asked with the agent's last message for the next prompt in the same
    session (a simulated user, :mod:`benchflow.sim_user.user`); None ends the conversation."""


class TrajectorySink(Protocol):
    """Where agents stream ``acp_trajectory.jsonl`` events as they happen."""

    def emit(self, event: Mapping[str, Any]) -> None: ...


@dataclass
class AgentOutcome:
    """What one agent phase did (fields feed result.json's agent_result)."""

    n_tool_calls: int = 0
    n_prompts: int = 0
    n_message_chunks: int = 0
    n_thought_chunks: int = 0
    timed_out: bool = False
    """The wall-clock budget ran out (category ``timeout``; still verified)."""
    idle_timed_out: bool = False
    error: str | None = None
    """Why the agent phase failed, in words ``classify_error`` understands."""
    error_category: str | None = None
    agent_timeout_info: dict[str, Any] | None = None
    idle_timeout_info: dict[str, Any] | None = None
    transport_error_info: dict[str, Any] | None = None
    trajectory_source: str | None = None
    partial_trajectory: bool = False
    return_code: int | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    """The ACP session the prompts went to (a later phase may reload it); None for non-ACP agents."""
    load_session: bool | None = None
    """Whether the agent advertised ``loadSession`` at ``initialize``; None when it was never asked."""


class Agent(Protocol):
    """Anything that attempts a task inside a sandbox."""

    name: str
    """Registry name (``oracle``, ``nop``, ``claude-agent-acp`` …)."""
    is_control: bool
    """True for controls (oracle, nop) that metrics leave out by default."""
    version: str | None
    """What is installed, as pinned (a registry agent's packages, ``name@1.2.3``); None for controls. Recorded
    as ``config.json``'s ``agent_version``, which ``bench eval compare`` checks."""
    needs_oracle: bool
    """True when the oracle folder must be uploaded before ``run`` (only the oracle)."""
    runs_as_root: bool
    """True when ``run`` runs as root whatever ``--sandbox-user`` says (the oracle): the sandbox then
    gets no sandbox user and its workspace stays as the image left it."""

    async def install(self, sandbox: Sandbox, ctx: AgentContext) -> None:
        """Install the agent in the sandbox (as root); log to ``agent/install-stdout.txt``.

        Raises:
            AgentError: category ``install_failure``.
        """

    async def run(self, sandbox: Sandbox, ctx: AgentContext) -> AgentOutcome:
        """Attempt the task; never raises for agent-side failures (they go on the outcome)."""
