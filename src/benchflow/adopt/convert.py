"""The conversion prompt, and the host's Codex CLI that carries it out (``bench eval adopt SOURCE``).

BenchFlow writes the prompt (the source, the target package, the conversion guide in ``guide.md``)
and, when the Codex CLI is on this host, launches

    codex exec --json --cd <folder holding benchmarks/> --skip-git-repo-check --sandbox workspace-write
               [-c key=value ...] [--model MODEL] <prompt>

with this process's environment (Codex reads its own login or ``OPENAI_API_KEY``), then prints its
JSONL events as plain lines. ``--dry-run`` prints that command instead.

Which driver carries the conversion out (:func:`choose_driver`): the host's Codex when the user
named ``--codex-bin`` (one that is not found is refused in one line, exit 2: a named binary is never
silently replaced) or the default ``codex`` is on PATH; otherwise the same prompt runs through
BenchFlow's own agent layer in a sandbox (``adopt/agent_run.py``), with the agent
``$BENCHFLOW_ADOPT_AGENT`` (default ``codex-acp``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from benchflow.errors import UserError

DEFAULT_CODEX_BIN = "codex"
AGENT_ENV = "BENCHFLOW_ADOPT_AGENT"
"""Names the agent of the sandboxed conversion (no Codex CLI on the host)."""
DEFAULT_AGENT = "codex-acp"
SANDBOX_WORKDIR = "/app"
"""The sandboxed conversion's folder: the source in ``source/``, the package in ``benchmarks/<name>/``."""


@dataclass(frozen=True)
class Driver:
    """What carries the conversion out: the host's Codex CLI (``codex``: its path) or a BenchFlow agent in a
    sandbox (``agent``: its registry name)."""

    codex: str | None = None
    agent: str | None = None

    def says(self, codex_bin: str) -> str:
        """The stderr line naming the path taken."""
        if self.codex:
            return f"conversion: the host's Codex CLI ({self.codex})"
        return (f"conversion: no {codex_bin!r} on PATH, so agent {self.agent} runs it in a BenchFlow sandbox "
                f"(set ${AGENT_ENV} for another agent; install Codex to run it on the host)")


def choose_driver(codex_bin: str, *, named: bool, env: Mapping[str, str] | None = None) -> Driver:
    """The host's Codex when the user ``named`` a ``--codex-bin`` (used as given: a named binary is never
    replaced, and one that is missing is refused when the run starts) or ``codex_bin`` is on PATH; else a
    BenchFlow agent (``$BENCHFLOW_ADOPT_AGENT``, default ``codex-acp``)."""
    if named:
        return Driver(codex=codex_bin)
    found = shutil.which(codex_bin)
    if found is not None:
        return Driver(codex=found)
    agent = (env if env is not None else os.environ).get(AGENT_ENV, "").strip()
    return Driver(agent=agent or DEFAULT_AGENT)


def check_overrides(overrides: Sequence[str]) -> list[str]:
    """``--codex-config`` values, each ``key=value`` with a key.

    Raises:
        UserError: one that is not.
    """
    for item in overrides:
        key, eq, _ = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--codex-config {item!r}: not key=value; write it as e.g. -c service_tier=flex")
    return list(overrides)


def source_for_prompt(source: str) -> str:
    """A local source as an absolute path (Codex runs in another folder); anything else as given."""
    path = Path(source).expanduser()
    return str(path.resolve()) if path.exists() else source


def adoption_prompt(source: str, slug: str, package: Path, workdir: Path) -> str:
    """The prompt the host's Codex gets: what to adopt, where to write it, and the conversion guide."""
    try:
        target = package.resolve().relative_to(workdir.resolve()).as_posix()
    except ValueError:
        target = str(package.resolve())
    verify = f"bench eval adopt {slug} --verify"
    if package.parent.name != "benchmarks":
        verify += f" --benchmarks-dir {shlex.quote(str(Path(target).parent))}"
    return _prompt(slug, [f"Source benchmark: {source}"], target, verify)


def sandbox_prompt(source: str, slug: str) -> str:
    """The same prompt for the sandboxed conversion: the source is a copy in ``/app/source``, and only the
    package folder goes back to the host, where the gate runs."""
    target = f"benchmarks/{slug}"
    return _prompt(slug, [
        f"Source benchmark: {SANDBOX_WORKDIR}/source (a copy of {source})",
        f"You work in {SANDBOX_WORKDIR}, a sandbox without network access and without the bench CLI. Only "
        f"{SANDBOX_WORKDIR}/{target}/ is copied back to the host when you finish; write nothing you need "
        "elsewhere, and no symbolic link that leads out of that folder (it is not copied)."],
        target, f"bench eval adopt {slug} --verify (run on the host after you finish)")


def _prompt(slug: str, head: list[str], target: str, verify: str) -> str:
    guide = resources.files("benchflow.adopt").joinpath("guide.md").read_text(encoding="utf-8")
    return "\n".join([
        f"# Adopt a benchmark into BenchFlow: {slug}", "", *head,
        f"Target package: {target}/ (scaffolded; fill it in)", "",
        guide.replace("{{VERIFY}}", verify).replace("{{PACKAGE}}", target),
    ])


def launch_command(prompt: str, *, workdir: Path, codex_bin: str = DEFAULT_CODEX_BIN, model: str | None = None,
                   overrides: Sequence[str] = ()) -> list[str]:
    """The argv of the Codex run (nothing is started)."""
    argv = [codex_bin, "exec", "--json", "--cd", str(workdir), "--skip-git-repo-check", "--sandbox",
            "workspace-write"]
    for item in overrides:
        argv += ["-c", item]
    if model:
        argv += ["--model", model]
    return [*argv, prompt]


def shell_line(argv: Sequence[str]) -> str:
    """``argv`` as one copy-pasteable shell line."""
    return shlex.join(argv)


def find_codex(codex_bin: str) -> str:
    """The path of the Codex CLI.

    Raises:
        UserError: it is not installed here (one line: what was looked for and the fix).
    """
    found = shutil.which(codex_bin)
    if found is None:
        raise UserError(f"codex CLI not found: {codex_bin!r} is not an executable on PATH; install it "
                        "(npm install -g @openai/codex) or pass --codex-bin PATH")
    return found


def render_event(line: str) -> str | None:
    """One plain line for one line of ``codex exec --json`` output (None: nothing worth a line).

    A line that is not a JSON event (a warning Codex prints) comes back as it is.
    """
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return line.rstrip("\n") or None
    if not isinstance(event, dict):
        return line.rstrip("\n")
    kind = event.get("type")
    item: dict[str, Any] = event.get("item") if isinstance(event.get("item"), dict) else {}
    if kind == "thread.started":
        return f"codex: session {event.get('thread_id')}"
    if kind == "item.completed" and item.get("type") == "agent_message":
        return f"codex: {item.get('text', '')}"
    if kind == "item.completed" and item.get("type") == "command_execution":
        return f"codex ran: {item.get('command', '')} (exit {item.get('exit_code')})"
    if kind == "item.completed" and item.get("type") == "file_change":
        changes = item.get("changes") or []
        return "\n".join(f"codex {c.get('kind', 'changed')}: {c.get('path')}" for c in changes
                         if isinstance(c, dict)) or None
    if kind == "turn.completed":
        usage = event.get("usage") or {}
        return (f"codex: turn done, {usage.get('input_tokens', 0)} input tokens "
                f"({usage.get('cached_input_tokens', 0)} cached), {usage.get('output_tokens', 0)} output tokens")
    if kind == "turn.failed":
        return f"codex: turn failed: {(event.get('error') or {}).get('message', '')}"
    if kind == "error":
        return f"codex error: {event.get('message', '')}"
    return None


def run_codex(argv: Sequence[str], *, cwd: Path, on_line: Callable[[str], None]) -> int:
    """Run Codex in ``cwd`` to its end, handing each rendered event to ``on_line``; its exit code.

    Codex's stderr goes straight to ours; its stdin is closed (the prompt is an argument).
    """
    with subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                          bufsize=1) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            shown = render_event(raw)
            if shown:
                on_line(shown)
        return proc.wait()
