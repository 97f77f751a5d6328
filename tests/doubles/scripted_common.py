"""TEST DOUBLE support: what the scripted provider servers share.

A scripted provider server (``scripted_anthropic``, ``scripted_openai``,
``scripted_gemini``) plays a model for a real agent. It decides each reply from
the conversation it is sent, the way a model would, by one rule:

* the request asks for structured output (a JSON schema) → a JSON object filling it
  (session titles, next-speaker and routing checks), whatever tools it lists;
* the request offers a shell or file-writing tool and the conversation holds no
  tool result yet → call that tool to do the task's :class:`Work`;
* the conversation holds a tool result → finish the turn with a short text;
* a grading request with no tools (a BenchFlow judge's prompt: a ``# Rubric`` of JSON criteria and
  the deliverables, or a monitor's ``# Trajectory``) → a verdict (:func:`grade`): a criterion is met
  (1) when every phrase its description quotes in double quotes appears in the graded material, else
  not (0);
* anything else (summaries, a call with no tools) → a plain answer.

Tool arguments are built from the tool's own JSON Schema, so the same server
drives Claude Code's ``Bash``, Codex's ``shell``/``exec_command``, Gemini CLI's
``run_shell_command`` or an editor's ``write_file``. Every request is kept in
:attr:`ScriptedServer.calls` with the kind of answer it got.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self

import uvicorn
from starlette.applications import Starlette

SHELL_TOOLS = {"bash", "shell", "shell_command", "run_shell_command", "exec_command", "execute_bash",
               "run_command", "run_terminal_cmd", "terminal", "execute", "bash_tool", "local_shell"}
WRITE_TOOLS = {"write", "write_file", "create_file", "writefile", "file_write", "str_replace_editor"}
COMMAND_KEYS = ("command", "cmd", "script", "commands")
PATH_KEYS = ("file_path", "path", "absolute_path", "filename", "file")
CONTENT_KEYS = ("content", "contents", "file_text", "text")


@dataclass(frozen=True)
class Work:
    """The task's work: a shell command, or a file to write (used when only an edit tool is offered)."""

    command: str
    path: str = ""
    content: str = ""
    summary: str = "Done: the file is written."

    @classmethod
    def hello_world(cls) -> Work:
        """The bundled hello-world task (``benchflow.demo``): ``/app/hello.txt`` holding ``Hello, world!``."""
        return cls(command="printf 'Hello, world!\\n' > /app/hello.txt", path="/app/hello.txt",
                   content="Hello, world!\n")


@dataclass
class ToolCall:
    """The call the server makes: the tool's name and its arguments."""

    name: str
    arguments: dict[str, Any]
    kind: str = "function"


def bare_name(name: str) -> str:
    """``mcp__acp__Bash`` → ``bash``: the tool's own name, lower case, without an MCP server prefix."""
    return name.rsplit("__", 1)[-1].lower()


def _schema_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return str(kind).lower()


def fill_schema(schema: dict[str, Any] | None, hint: str = "ok") -> Any:
    """A small value valid for ``schema``: required properties filled, enums take ``user``/their first value."""
    schema = schema or {}
    if "enum" in schema:
        values = list(schema["enum"])
        return "user" if "user" in values else values[0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return fill_schema(schema[key][0], hint)
    kind = _schema_type(schema)
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: fill_schema(props.get(name) or {}, name) for name in schema.get("required") or props}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return hint


def _arguments(schema: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool with ``schema``: ``wanted`` values by key, other required keys filled."""
    props = schema.get("properties") or {}
    args = {key: value for key, value in wanted.items()}
    for name in schema.get("required") or []:
        if name not in args:
            args[name] = fill_schema(props.get(name) or {}, "Create hello.txt")
    return args


def plan_tool_call(tools: list[tuple[str, dict[str, Any]]], work: Work) -> ToolCall | None:
    """The call doing ``work`` with one of ``tools`` ((name, JSON Schema) pairs); None when none fits."""
    for name, schema in tools:
        if bare_name(name) in SHELL_TOOLS:
            props = (schema or {}).get("properties") or {}
            key = next((k for k in COMMAND_KEYS if k in props), "command")
            is_list = _schema_type(props.get(key) or {}) == "array"
            value: Any = ["bash", "-lc", work.command] if is_list else work.command
            return ToolCall(name, _arguments(schema or {}, {key: value}))
    if work.path:
        for name, schema in tools:
            if bare_name(name) in WRITE_TOOLS:
                props = (schema or {}).get("properties") or {}
                path_key = next((k for k in PATH_KEYS if k in props), None)
                content_key = next((k for k in CONTENT_KEYS if k in props), None)
                if path_key and content_key:
                    wanted: dict[str, Any] = {path_key: work.path, content_key: work.content}
                    if "command" in props:  # str_replace_editor style: {"command": "create", ...}
                        wanted["command"] = "create"
                    return ToolCall(name, _arguments(schema, wanted))
    return None


_RUBRIC = re.compile(r"# Rubric\n\n(\{.*?\})\s*# (?:Deliverables|Trajectory)[^\n]*\n\n(.*)\n\n# Your answer",
                     re.DOTALL)


def grade(prompt: str) -> str | None:
    """The verdict on a judge's grading ``prompt`` (JSON ``{"criteria": [...]}``), or None when it is not one."""
    found = _RUBRIC.search(prompt)
    if found is None:
        return None
    try:
        criteria = json.loads(found.group(1))["criteria"]
    except (ValueError, KeyError, TypeError):
        return None
    deliverables = found.group(2)
    verdicts = []
    for criterion in criteria:
        quoted = re.findall(r'"([^"]+)"', str(criterion.get("description", "")))
        met = bool(quoted) and all(q in deliverables for q in quoted)
        verdicts.append({"name": criterion.get("name"), "score": 1 if met else 0,
                         "reasoning": ("found " if met else "missing ") + ", ".join(quoted)})
    return json.dumps({"criteria": verdicts})


def approx_tokens(payload: Any) -> int:
    """A deterministic token count for a request: about four characters a token."""
    return max(1, len(json.dumps(payload, sort_keys=True)) // 4)


def sse(data: Any, event: str | None = None) -> bytes:
    """One Server-Sent Event (``event:`` line when named, one ``data:`` line of JSON)."""
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + (data if isinstance(data, str) else json.dumps(data, separators=(",", ":")))
            + "\n\n").encode()


@dataclass
class Call:
    """One request the server got and what it answered (``tool_call``, ``final``, ``verdict``, ``side``, ``count``, ``models``)."""

    path: str
    kind: str
    body: dict[str, Any] = field(repr=False)
    model: str = ""
    stream: bool = False
    tool: ToolCall | None = None
    authorization: str | None = None
    """The request's Authorization header (what key reached the provider)."""


class ScriptedServer:
    """A Starlette app on ``127.0.0.1:<ephemeral port>`` in a thread; use as a context manager."""

    def __init__(self, work: Work | None = None, host: str = "127.0.0.1") -> None:
        self.work = work or Work.hello_world()
        self.host = host
        self.port = 0
        self.calls: list[Call] = []
        self.hold = threading.Event()
        """Cleared: each request waits until it is set again (a provider slow to answer); see :attr:`waiting`."""
        self.hold.set()
        self.waiting = 0
        """Requests waiting on :attr:`hold` right now."""
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(routes=self.routes())

    def routes(self) -> list:  # pragma: no cover - each provider lists its own
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def record(self, call: Call) -> Call:
        with self._lock:
            self.calls.append(call)
        return call

    async def held(self) -> None:
        """Wait while :attr:`hold` is cleared (a provider that has not answered yet)."""
        if self.hold.is_set():
            return
        with self._lock:
            self.waiting += 1
        try:
            while not self.hold.is_set():
                await asyncio.sleep(0.01)
        finally:
            with self._lock:
                self.waiting -= 1

    def kinds(self) -> list[str]:
        with self._lock:
            return [c.kind for c in self.calls]

    def start(self) -> ScriptedServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, lifespan="off", log_level="warning", access_log=False,
                                http="h11", loop="asyncio")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve(sockets=[sock])),
                                        daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the scripted server did not start within 10s")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self.hold.set()  # a held request answers, so the server can end
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
