"""Write small native-layout tasks for run-engine tests (POSIX sh on debian:bookworm-slim)."""

from __future__ import annotations

from pathlib import Path

DOCKERFILE = "FROM debian:bookworm-slim\nWORKDIR /app\n"


def make_task(root: Path, name: str, *, solve: str = "true", test: str, agent_timeout: float | None = 60,
              verifier_timeout: float = 30, dockerfile: str = DOCKERFILE, network: str = "no-network",
              prompt: str = "Do the task.") -> Path:
    """A task folder ``root/name`` whose oracle runs ``solve`` and whose verifier runs ``test``."""
    task = root / name
    (task / "environment").mkdir(parents=True)
    (task / "oracle").mkdir()
    (task / "verifier").mkdir()
    agent = f"agent: {{timeout_sec: {agent_timeout}}}\n" if agent_timeout else ""
    (task / "task.md").write_text(
        "---\nschema_version: '1.3'\n" + agent
        + f"verifier: {{timeout_sec: {verifier_timeout}}}\nsandbox: {{network_mode: {network}}}\n---\n\n"
        + f"## prompt\n\n{prompt}\n")
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    (task / "oracle" / "solve.sh").write_text("#!/bin/sh\n" + solve + "\n")
    (task / "verifier" / "test.sh").write_text("#!/bin/sh\nmkdir -p /logs/verifier\n" + test + "\n")
    return task


PASS_IF_HELLO = 'if [ "$(cat /app/hello.txt 2>/dev/null)" = hello ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'
WRITE_HELLO = "echo hello > /app/hello.txt"
