"""``--harness native``: a registry agent's own CLI in headless JSON mode (claude, codex).

Instead of the ACP adapter, the trial runs the CLI named by the agent's
``native`` section (``claude -p --output-format stream-json``, ``codex exec
--json``) as the sandbox user in the workspace. Everything around the process
is the ACP runtime's (this module extends :class:`~.acp_runtime._AcpRun`):
the same environment and credential files, stderr to ``agent/<agent>.txt``,
the same trajectory merger and counters, the same watchdogs, the same
outcome fields and error words, so a result reads the same whichever harness
ran it.

Conversation: one process per prompt, the prompt on its stdin. The CLI
reports a session id (claude's ``session_id``, codex's ``thread_id``); every
later prompt gets it as ``BENCHFLOW_NATIVE_SESSION`` and the command passes it
to ``--resume`` / ``exec resume``, so the CLI continues the same conversation
rather than starting over. Stdout is parsed line by line as it arrives and
each event goes to the trajectory at once, so a timeout keeps what was done.
There is no cancel request in these modes: a watchdog trip kills the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import IO, Any, Protocol

from benchflow.categories import classify_error
from benchflow.errors import BenchError, ConfigError
from benchflow.sandbox.base import Process, Sandbox
from benchflow.util.redact import redact_text

from .acp_runtime import EXIT_GRACE_SEC, _AcpRun
from .agent_config import AgentConfig, NativeMode
from .agent_env import check_effort, format_model
from .base import AgentContext, AgentOutcome
from .install import install_agent
from .native_claude import ClaudeStreamParser
from .native_codex import CodexExecParser
from .trajectory import AcpTrajectoryFile
from .watchdog import Trip, Watchdog

READ_CHUNK = 1 << 16
"""Stdout is read in chunks and split on newlines here, so one huge event line is never cut."""


class StreamParser(Protocol):
    """What the run needs from a CLI's event-stream parser."""

    session_id: str | None
    usage: dict[str, int]
    usage_is_cumulative: bool
    cost_is_cumulative: bool
    finished: bool
    error: str | None
    cost_usd: float | None

    def feed(self, line: dict[str, Any]) -> list[dict[str, Any]]: ...

    def done(self) -> None: ...


def make_parser(fmt: str, prompt_no: int) -> StreamParser:
    """A fresh parser for one process's stdout in ``fmt`` (a :class:`NativeMode` format)."""
    if fmt == "claude-stream-json":
        return ClaudeStreamParser()
    return CodexExecParser(prompt_no)


def resolve_native(spec: str) -> NativeAgent:
    """The native-harness agent for a registry name/alias or ``.toml`` path.

    Raises:
        ConfigError: unknown agent, or one without a ``native`` section (the message lists those with one).
    """
    from .registry import get_agent_config, list_agents

    config = get_agent_config(spec)
    if config.native is None:
        having = ", ".join(sorted(c.name for c in list_agents() if c.native is not None)) or "none"
        raise ConfigError(f"--harness native: agent {config.name} has no native mode (no [native] section); "
                          f"agents with one: {having}; or use --harness acp")
    return NativeAgent(config)


class NativeAgent:
    """The :class:`~benchflow.agents.base.Agent` for one registry entry run through its own CLI."""

    is_control = False
    needs_oracle = False
    runs_as_root = False

    def __init__(self, config: AgentConfig) -> None:
        if config.native is None:
            raise ConfigError(f"agent {config.name}: no native mode; add a [native] section "
                              "(format, command) or drop --harness native")
        native = config.native
        # the install layer and its cache key follow the CLI actually run
        self.config = config.model_copy(update={"install": native.install}) if native.install else config
        self.name = config.name
        self.version = self.config.install.version

    async def install(self, sandbox: Sandbox, ctx: AgentContext) -> None:
        await install_agent(sandbox, self.config, ctx.trial_dir / "agent" / "install-stdout.txt")

    async def run(self, sandbox: Sandbox, ctx: AgentContext) -> AgentOutcome:
        return await _NativeRun(self.config, sandbox, ctx).run()


class _NativeRun(_AcpRun):
    """State of one native run: the current process, the session id, the counters."""

    def __init__(self, config: AgentConfig, sandbox: Sandbox, ctx: AgentContext) -> None:
        super().__init__(config, sandbox, ctx)
        assert config.native is not None
        self.native: NativeMode = config.native
        self.outcome.trajectory_source = "native"
        if self.model:
            self.env["BENCHFLOW_NATIVE_MODEL"] = format_model(config, self.model)
        if ctx.effort:
            self.env["BENCHFLOW_NATIVE_EFFORT"] = ctx.effort
        self.session: str | None = None
        self.reported_usage: dict[str, dict[str, int]] = {}
        self.reported_cost: dict[str, float] = {}
        """What the CLI reported, per session for running totals, else per prompt."""
        self.pump: asyncio.Task[None] | None = None
        self.tripped = False

    async def run(self) -> AgentOutcome:
        out, ctx = self.outcome, self.ctx
        try:
            check_effort(self.config, ctx.effort)
            await self._copy_subscription_login()
            await self._write_credentials()
        except BenchError as exc:
            out.error, out.error_category = str(exc), exc.category
            return out
        watchdog = Watchdog(self.activity, timeout_sec=ctx.timeout_sec, idle_timeout_sec=ctx.idle_timeout_sec,
                            should_stop=ctx.should_stop)
        with self._log_file().open("a", encoding="utf-8") as handle:
            talk = asyncio.create_task(self._conversation(handle))
            trip_task = asyncio.create_task(watchdog.wait_for_trip())
            try:
                done, _ = await asyncio.wait({talk, trip_task}, return_when=asyncio.FIRST_COMPLETED)
                if talk in done:
                    trip_task.cancel()
                    if talk.exception() is not None:
                        self._crashed(talk.exception())
                else:
                    await self._stop_on_native_trip(talk, trip_task.result())
            finally:
                for task in (talk, trip_task):
                    task.cancel()
                await asyncio.gather(talk, trip_task, return_exceptions=True)
                await self._end_process()
        if isinstance(ctx.trajectory, AcpTrajectoryFile):
            ctx.trajectory.close()
        self._finish_counts()
        return out

    async def _conversation(self, handle: IO[str]) -> None:
        for number, text in enumerate(self.ctx.prompts, 1):
            self.client.record({"type": "user_message", "text": text})
            self.activity.touch()
            parser = make_parser(self.native.format, number)
            env = dict(self.env)
            if self.session:
                env["BENCHFLOW_NATIVE_SESSION"] = self.session
            process = await self.sandbox.exec_stream(
                ["sh", "-c", self.native.command], user=self.ctx.user, env=env, cwd=self.ctx.workdir)
            self.process = process
            self.pump = asyncio.create_task(self._pump_stderr(process, handle))
            await _send_prompt(process, text)
            await self._read_events(process, parser)
            if self.tripped:
                return
            code = await process.wait()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self.pump, EXIT_GRACE_SEC)
            self.process, self.outcome.return_code = None, code
            parser.done()
            self._add_reported(number, parser)
            self.session = parser.session_id or self.session
            # the CLI's own result decides (claude exits 1 at --max-turns, a normal stop over ACP)
            if not parser.finished or parser.error:
                self._failed(number, parser, code)
                return
            self.outcome.n_prompts += 1

    async def _read_events(self, process: Process, parser: StreamParser) -> None:
        pending = bytearray()
        while chunk := await process.stdout.read(READ_CHUNK):
            pending += chunk
            if b"\n" not in chunk:
                continue
            *lines, rest = bytes(pending).split(b"\n")
            pending = bytearray(rest)
            for line in lines:
                self._take_line(line, parser)
        if pending.strip():
            self._take_line(bytes(pending), parser)

    def _take_line(self, raw: bytes, parser: StreamParser) -> None:
        try:
            message = json.loads(raw)
        except ValueError:  # a banner or progress text on stdout: not an event
            return
        if isinstance(message, dict):
            for event in parser.feed(message):
                self.client.record(event)

    def _add_reported(self, number: int, parser: StreamParser) -> None:
        """``outcome.usage["agent_reported"]``: what the CLI says it used, summed without double counting."""
        if not parser.usage and parser.cost_usd is None:
            return

        def key(cumulative: bool) -> str:
            return parser.session_id if cumulative and parser.session_id else f"prompt {number}"

        if parser.usage:
            self.reported_usage[key(parser.usage_is_cumulative)] = dict(parser.usage)
        if parser.cost_usd is not None:
            self.reported_cost[key(parser.cost_is_cumulative)] = parser.cost_usd
        totals: dict[str, Any] = {}
        for usage in self.reported_usage.values():
            for name, value in usage.items():
                totals[name] = totals.get(name, 0) + value
        if self.reported_cost:
            totals["cost_usd"] = round(sum(self.reported_cost.values()), 10)
        self.outcome.usage["agent_reported"] = totals

    def _failed(self, number: int, parser: StreamParser, code: int) -> None:
        """Describe a prompt the CLI did not complete, in the words ``classify_error`` reads."""
        out = self.outcome
        cli = next((w for w in self.native.command.split() if "=" not in w), "cli").rsplit("/", 1)[-1]
        if parser.error:
            out.error = f"Agent CLI error during prompt {number} ({cli} exit code {code}): {parser.error}"
        else:
            out.error = (f"Agent closed stdout during prompt {number} ({cli} exited with code {code} "
                         f"before reporting a result); see agent/{self.config.log_name}.txt")
            out.transport_error_info = {
                "reason": "pipe_closed", "raw_message": f"exit code {code}", "process_exit_code": code,
                "process_pid": None, "transport_diagnosis": "agent stdout reached EOF",
                "stderr_snippet": self.stderr_tail[-500:]}
        out.error = self._redacted(out.error)
        out.error_category = classify_error(out.error)

    def _crashed(self, exc: BaseException) -> None:
        out = self.outcome
        if isinstance(exc, BenchError):
            out.error, out.error_category = str(exc), exc.category
            return
        out.error = self._redacted(f"Agent run failed: {type(exc).__name__}: {exc}")
        out.error_category = classify_error(out.error)

    def _redacted(self, text: str) -> str:
        return redact_text(text, self.secrets)

    async def _stop_on_native_trip(self, talk: asyncio.Task[None], trip: Trip) -> None:
        """Kill the CLI (these modes have no cancel request) and record the trip as an ACP run does."""
        self.tripped = True
        await self._end_process()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(talk), EXIT_GRACE_SEC)
        self._record_trip(trip, answered=False)

    async def _end_process(self) -> None:
        """Kill the current CLI process if it still runs, and drain its stderr."""
        process, self.process = self.process, None
        if process is None:
            return
        code: int | None = None
        with contextlib.suppress(Exception):
            code = await asyncio.wait_for(asyncio.shield(process.wait()), 0.1)
        if code is None:
            with contextlib.suppress(Exception):
                await process.kill()
            with contextlib.suppress(Exception):
                code = await asyncio.wait_for(process.wait(), 5)
        if self.pump is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self.pump, EXIT_GRACE_SEC)
        self.outcome.return_code = code


async def _send_prompt(process: Process, text: str) -> None:
    """The prompt on stdin, then EOF; a CLI that already died shows in its exit code instead."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        process.stdin.write(text.encode())
        await process.stdin.drain()
    with contextlib.suppress(Exception):
        process.stdin.close()
