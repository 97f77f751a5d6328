"""A registry agent driven over ACP inside the sandbox (contracts §5.3–5.4).

``install`` runs the agent's recipe as root. ``run`` launches the agent as the
sandbox user over ``exec_stream`` and speaks ACP with the official SDK:
``initialize`` → ``session/new`` (cwd = workspace) → model/effort selection →
one ``session/prompt`` per prompt, with ``session/update`` events streamed to
the trajectory as they arrive. Watchdogs (wall clock, idle) end a run with
``session/cancel``, a short grace, then a kill; the outcome records why. Agent
failures never raise: they land on the outcome with a category.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path
from typing import IO, Any

from acp import PROTOCOL_VERSION, RequestError, connect_to_agent, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from benchflow.categories import classify_error
from benchflow.errors import AgentError, BenchError
from benchflow.sandbox.base import Process, Sandbox
from benchflow.util.redact import is_secret_entry, redact_obj, redact_text

from .acp_client import BenchClient, ProcessTransport
from .agent_config import AgentConfig
from .agent_env import (
    check_effort,
    credential_file_script,
    format_model,
    home_of,
    process_env,
)
from .base import AgentContext, AgentOutcome
from .install import install_agent
from .mcp import acp_mcp_servers
from .trajectory import AcpTrajectoryFile
from .watchdog import Activity, Trip, Watchdog

log = logging.getLogger(__name__)

CANCEL_GRACE_SEC = 5.0
"""How long an agent gets to answer ``session/cancel`` before it is killed."""
EXIT_GRACE_SEC = 3.0
"""How long an agent gets to exit on its own once its stdin is closed (and its stderr to drain)."""


class AcpAgent:
    """The :class:`~benchflow.agents.base.Agent` for one registry entry."""

    is_control = False
    needs_oracle = False
    runs_as_root = False

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.name = config.name
        self.version = config.install.version

    async def install(self, sandbox: Sandbox, ctx: AgentContext) -> None:
        await install_agent(sandbox, self.config, ctx.trial_dir / "agent" / "install-stdout.txt")

    async def run(self, sandbox: Sandbox, ctx: AgentContext) -> AgentOutcome:
        return await _AcpRun(self.config, sandbox, ctx).run()

    async def handshake(self, sandbox: Sandbox, ctx: AgentContext, timeout_sec: float = 120.0) -> dict[str, Any]:
        """Launch the agent and complete ACP ``initialize`` only: no session, no prompt, no model call.

        For ``bench doctor --agent-start``: a broken install or login shows before a batch.

        Returns:
            The agent's ``initialize`` result (protocolVersion, agentInfo, agentCapabilities, authMethods).

        Raises:
            AgentError: the agent did not answer; category as for a run (pipe_closed, acp_error, ...).
        """
        return await _AcpRun(self.config, sandbox, ctx).handshake(timeout_sec)


class _StepError(Exception):
    """An ACP request failed; ``step`` names which one. Not a BenchError: private to this module, it
    carries the cause to the runtime's own handler, which reports it as the agent's error."""

    def __init__(self, step: str, cause: BaseException) -> None:
        super().__init__(step)
        self.step = step
        self.cause = cause


class _AcpRun:
    """State of one ``run``: the process, the connection, the counters."""

    def __init__(self, config: AgentConfig, sandbox: Sandbox, ctx: AgentContext) -> None:
        self.config, self.sandbox, self.ctx = config, sandbox, ctx
        self.outcome = AgentOutcome(trajectory_source="acp")
        self.activity = Activity()
        self.model = ctx.model or config.model.default
        self.env = process_env(config, ctx.env, user=ctx.user, model=self.model, effort=ctx.effort)
        self.secrets = [v for k, v in self.env.items() if is_secret_entry(k, v)]
        if isinstance(ctx.trajectory, AcpTrajectoryFile):
            ctx.trajectory.add_secrets(self.secrets)
        self.client = BenchClient(self._emit, self.activity)
        self.session_id: str | None = None
        self.process: Process | None = None
        self.stderr_tail = ""

    def _emit(self, event: dict[str, Any]) -> None:
        self.ctx.trajectory.emit(redact_obj(event, self.secrets))

    async def run(self) -> AgentOutcome:
        out = self.outcome
        try:
            check_effort(self.config, self.ctx.effort)
            await self._launch()
        except BenchError as exc:
            out.error, out.error_category = str(exc), exc.category
            return out
        with self._log_file().open("a", encoding="utf-8") as handle:
            pump = asyncio.create_task(self._pump_stderr(self.process, handle))
            try:
                await self._drive()
            finally:
                await self._teardown(pump)
        self._finish_counts()
        return out

    async def handshake(self, timeout_sec: float) -> dict[str, Any]:
        await self._launch()
        with self._log_file().open("a", encoding="utf-8") as handle:
            pump = asyncio.create_task(self._pump_stderr(self.process, handle))
            transport = ProcessTransport(self.process)
            conn = connect_to_agent(self.client, transport)
            try:
                response = await asyncio.wait_for(self._initialize(conn), timeout_sec)
            except Exception as exc:  # noqa: BLE001 - described below
                if isinstance(exc, asyncio.TimeoutError):
                    exc = RequestError(-32603, f"no initialize answer within {timeout_sec:g}s (timed out)")
                self._describe_failure(_StepError("initialize", exc), transport)
            finally:
                await conn.close()
                await self._teardown(pump)
        if self.outcome.error:
            raise AgentError(self.outcome.error, category=self.outcome.error_category)
        return response.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def _launch(self) -> None:
        await self._copy_subscription_login()
        await self._write_credentials()
        self.process = await self.sandbox.exec_stream(
            ["sh", "-c", f"exec {self.config.launch}"], user=self.ctx.user, env=self.env, cwd=self.ctx.workdir)

    def _log_file(self) -> Path:
        path = self.ctx.trial_dir / "agent" / f"{self.config.log_name}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    async def _copy_subscription_login(self) -> None:
        """With ``--host-login``, copy the host's subscription login files in when no API key stands
        in for them."""
        login = self.config.subscription
        if login is None or not self.ctx.host_login or any(self.env.get(name) for name in login.replaces_env):
            return
        files = [Path(p).expanduser() for p in login.host_files]
        files = [f for f in files if f.is_file()]
        if not files:
            return
        target = f"{self.env.get('HOME') or home_of(self.ctx.user)}/{login.container_dir}"
        for path in files:
            await self.sandbox.put(path, f"{target}/{path.name}")
        owner = self.ctx.user or "root"
        fix = 'chown -R "$1" "$2" && chmod -R go-rwx "$2"'
        result = await self.sandbox.exec(["sh", "-c", fix, "sh", owner, target], timeout=60)
        if not result.success:
            raise BenchError(f"Agent {self.config.name} setup failed copying its login to {target}: "
                             f"{result.stderr.strip()[-300:]}")

    async def _write_credentials(self) -> None:
        home = self.env.get("HOME") or home_of(self.ctx.user)
        plan = credential_file_script(self.config, self.env, home)
        if plan is None:
            return
        script, stdin = plan
        result = await self.sandbox.exec(["bash", "-c", script], user=self.ctx.user, stdin=stdin, timeout=60)
        if not result.success:
            raise BenchError(f"Agent {self.config.name} setup failed writing its credential files: "
                             f"{redact_text(result.stderr, self.secrets)[-300:]}")

    async def _pump_stderr(self, process: Process, handle: IO[str]) -> None:
        while True:
            try:
                line = await process.stderr.readline()
            except ValueError:  # a line longer than the reader's limit: take what is there
                line = await process.stderr.read(1 << 16)
            if not line:
                return
            text = redact_text(line.decode("utf-8", "replace"), self.secrets)
            handle.write(text)
            handle.flush()
            self.stderr_tail = (self.stderr_tail + text)[-2000:]

    async def _drive(self) -> None:
        assert self.process is not None
        transport = ProcessTransport(self.process)
        conn = connect_to_agent(self.client, transport)
        watchdog = Watchdog(self.activity, timeout_sec=self.ctx.timeout_sec, idle_timeout_sec=self.ctx.idle_timeout_sec,
                            should_stop=self.ctx.should_stop)
        session = asyncio.create_task(self._session(conn))
        trip_task = asyncio.create_task(watchdog.wait_for_trip())
        try:
            done, _ = await asyncio.wait({session, trip_task}, return_when=asyncio.FIRST_COMPLETED)
            if session in done:
                trip_task.cancel()
                self._record_session_result(session, transport)
            else:
                await self._stop_on_trip(conn, session, trip_task.result())
        finally:
            for task in (session, trip_task):
                task.cancel()
            await asyncio.gather(session, trip_task, return_exceptions=True)
            await conn.close()

    async def _session(self, conn: Any) -> None:
        ctx = self.ctx
        try:
            init = await self._initialize(conn)
        except Exception as exc:  # noqa: BLE001 - classified by the caller
            raise _StepError("initialize", exc) from exc
        caps = getattr(init, "agent_capabilities", None)
        self.outcome.load_session = bool(getattr(caps, "load_session", False))
        if ctx.resume_session is not None:
            session = await self._load(conn, ctx.resume_session)
        else:
            try:
                session = await conn.new_session(cwd=ctx.workdir, mcp_servers=acp_mcp_servers(ctx.mcp_servers))
            except Exception as exc:  # noqa: BLE001
                raise _StepError("session/new", exc) from exc
            self.session_id = session.session_id
        self.outcome.session_id = self.session_id
        try:
            await self._select_model(conn, getattr(session, "config_options", None) or [])
        except Exception as exc:  # noqa: BLE001
            raise _StepError("model selection", exc) from exc
        for text in ctx.prompts:
            if not await self._prompt(conn, text):
                return
        while ctx.follow_up is not None:
            try:
                text = await ctx.follow_up(self.client.merger.last_reply())
            except Exception as exc:  # noqa: BLE001 - e.g. the simulated user's model call failed
                raise _StepError("the simulated user's reply", exc) from exc
            finally:
                self.activity.touch()  # the user's thinking time is not the agent's idleness
            if text is None or not await self._prompt(conn, text):
                return

    async def _prompt(self, conn: Any, text: str) -> bool:
        """One ``session/prompt``; False once the agent answered ``cancelled``."""
        self.client.record({"type": "user_message", "text": text})
        self.activity.touch()
        try:
            response = await conn.prompt(session_id=self.session_id, prompt=[text_block(text)])
        except Exception as exc:  # noqa: BLE001
            raise _StepError("session/prompt", exc) from exc
        self.outcome.n_prompts += 1
        self._add_usage(response.usage)
        return response.stop_reason != "cancelled"

    async def _load(self, conn: Any, session_id: str) -> Any:
        """``session/load`` of an earlier conversation, refused when the agent did not advertise
        ``loadSession``. The history the agent replays is not this phase's trajectory."""
        if not self.outcome.load_session:
            raise AgentError(f"agent {self.config.name} does not advertise loadSession in its ACP initialize "
                             f"capabilities, so session {session_id} cannot be reloaded; run without "
                             "--resume-session / --retry-resume-session", category="agent_integration")
        self.session_id = session_id
        self.client.replaying = True
        try:
            return await conn.load_session(cwd=self.ctx.workdir, session_id=session_id,
                                           mcp_servers=acp_mcp_servers(self.ctx.mcp_servers))
        except Exception as exc:  # noqa: BLE001
            raise _StepError("session/load", exc) from exc
        finally:
            self.client.replaying = False

    async def _initialize(self, conn: Any) -> Any:
        return await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False),
            client_info=Implementation(name="benchflow", version=_version()))

    async def _select_model(self, conn: Any, options: list[Any]) -> None:
        cfg, ctx = self.config, self.ctx
        effort = ctx.effort
        if self.model and cfg.model.via in ("config_option", "set_model"):
            model_id = format_model(cfg, self.model, self.env.get("BENCHFLOW_PROVIDER_NAME"))
            if effort and cfg.effort.via == "model_suffix":
                model_id = f"{model_id}[{effort}]"
            option = _find_option(options, cfg.model.config_id, "model")
            if option is not None:
                await conn.set_config_option(config_id=option.id, session_id=self.session_id, value=model_id)
            else:
                # session/set_model is not in the SDK's stable surface; send it on the raw connection
                await conn._conn.send_request("session/set_model", {"sessionId": self.session_id, "modelId": model_id})
        if effort and cfg.effort.via == "config_option":
            option = _find_option(options, cfg.effort.config_id, "thought_level")
            config_id = option.id if option is not None else cfg.effort.config_id
            await conn.set_config_option(config_id=config_id, session_id=self.session_id, value=effort)

    def _add_usage(self, usage: Any) -> None:
        if usage is None:
            return
        totals = self.outcome.usage.setdefault("agent_reported", {})
        for key, value in usage.model_dump(exclude_none=True, exclude={"field_meta"}).items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value

    def _record_session_result(self, session: asyncio.Task[None], transport: ProcessTransport) -> None:
        exc = session.exception()
        if exc is not None:
            self._describe_failure(exc, transport)

    def _describe_failure(self, exc: BaseException, transport: ProcessTransport) -> None:
        out = self.outcome
        step = exc.step if isinstance(exc, _StepError) else "run"
        cause = exc.cause if isinstance(exc, _StepError) else exc
        if isinstance(cause, AgentError):  # refused by this runtime, with its own reason and category
            out.error, out.error_category = redact_text(str(cause), self.secrets), cause.category
            return
        if isinstance(cause, RequestError):
            data = "" if cause.data is None else " " + json.dumps(cause.data, default=str)[:500]
            out.error = redact_text(f"ACP error {cause.code} during {step}: {cause}{data}", self.secrets)
        elif isinstance(cause, ConnectionError) or transport.eof:
            out.error = (f"Agent closed stdout during {step} (the process ended or broke the pipe); "
                         f"see agent/{self.config.log_name}.txt")
            out.transport_error_info = {
                "reason": "pipe_closed", "raw_message": str(cause)[:500], "process_exit_code": None,
                "process_pid": None, "transport_diagnosis": "agent stdout reached EOF" if transport.eof
                else "write to agent stdin failed", "stderr_snippet": self.stderr_tail[-500:],
            }
        else:
            out.error = redact_text(f"Agent run failed during {step}: {type(cause).__name__}: {cause}", self.secrets)
        out.error_category = classify_error(out.error)

    async def _stop_on_trip(self, conn: Any, session: asyncio.Task[None], trip: Trip) -> None:
        if self.session_id is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.cancel(session_id=self.session_id), CANCEL_GRACE_SEC)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(session), CANCEL_GRACE_SEC)
        answered = session.done() and not session.cancelled() and session.exception() is None
        self._record_trip(trip, answered)

    def _record_trip(self, trip: Trip, answered: bool) -> None:
        """Put a watchdog trip on the outcome and the trajectory (shared with the native harness)."""
        out = self.outcome
        info = dict(trip.info)
        out.partial_trajectory = not answered
        if trip.kind == "stop":  # asked for by the run (a spent budget): graded, not an error
            self._emit({"type": "agent_stopped", "reason": info["reason"], "terminal_trajectory_complete": answered})
            return
        out.error, out.error_category = trip.error, classify_error(trip.error)
        if trip.kind == "wall_clock":
            info["pending_tool_call_ids"] = self.client.merger.pending_tool_call_ids()
            info["terminal_event_recorded"] = True
            info["terminal_trajectory_complete"] = answered
            out.timed_out, out.agent_timeout_info = True, info
            self._emit({"type": "agent_timeout", "reason": "wall_clock_timeout", "timeout_sec": info["timeout_sec"],
                        "pending_tool_call_ids": info["pending_tool_call_ids"],
                        "terminal_trajectory_complete": answered})
        else:
            out.idle_timed_out, out.idle_timeout_info = True, info
            self._emit({"type": "agent_timeout", "reason": "idle_timeout",
                        "idle_timeout_sec": info["idle_timeout_sec"], "terminal_trajectory_complete": answered})

    async def _teardown(self, pump: asyncio.Task[None]) -> None:
        process = self.process
        assert process is not None
        exit_code: int | None = None
        with contextlib.suppress(Exception):
            tripped = self.outcome.timed_out or self.outcome.idle_timed_out  # it had its grace already
            exit_code = await asyncio.wait_for(asyncio.shield(process.wait()), 0.1 if tripped else EXIT_GRACE_SEC)
        if exit_code is None:
            with contextlib.suppress(Exception):
                await process.kill()
            with contextlib.suppress(Exception):
                exit_code = await asyncio.wait_for(process.wait(), 5)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(pump, EXIT_GRACE_SEC)
        self.outcome.return_code = exit_code
        if self.outcome.transport_error_info is not None:
            self.outcome.transport_error_info["process_exit_code"] = exit_code
            self.outcome.transport_error_info["stderr_snippet"] = self.stderr_tail[-500:]
        if isinstance(self.ctx.trajectory, AcpTrajectoryFile):
            self.ctx.trajectory.close()

    def _finish_counts(self) -> None:
        merger, out = self.client.merger, self.outcome
        out.n_tool_calls = merger.n_tool_calls
        out.n_message_chunks = merger.n_message_chunks
        out.n_thought_chunks = merger.n_thought_chunks


def _find_option(options: list[Any], config_id: str, category: str) -> Any | None:
    for option in options:
        if getattr(option, "id", None) == config_id:
            return option
    for option in options:
        if getattr(option, "category", None) == category:
            return option
    return None


def _version() -> str:
    from benchflow import __version__

    return __version__
