"""``bench eval smoke``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

smoke_cmd = typer.Typer()


@smoke_cmd.command(help="Run a bundled hello-world task once per credentialed agent, one at a time.\n\n"
                        "Checks the sandbox first; for each agent prints one line per stage (install, launch, "
                        "handshake, first model call: ok with seconds, FAIL with the cause, or skipped after a "
                        "failure), then agent, reward, time and trajectory path. Exits 1 unless every run scores 1.0.")
def smoke(
    agent: Optional[list[str]] = typer.Option(None, "--agent", help="Agent to smoke, as NAME or NAME=MODEL; repeatable. Default: every agent with a credential on this machine (bench agents)."),
    sandbox: str = typer.Option("docker", "--sandbox", help="Sandbox: docker (default), remote-docker or local."),
    jobs_dir: Path = typer.Option(Path("jobs/smoke"), "--jobs-dir", help="Parent directory; each smoke writes a timestamped folder here."),
    timeout_sec: int = typer.Option(900, "--timeout-sec", min=1, help="Kill a run that takes longer than this many seconds."),
) -> None:
    from rich.markup import escape

    from benchflow.cli.console import stdout_console
    from benchflow.jobs.smoke import run_smoke

    out = stdout_console()

    def show(row) -> None:
        for stage in row.stages:
            out.print(f"{escape(row.agent)}  {stage.name}  {escape(stage.line())}")
        reward = "n/a" if row.reward is None else f"{row.reward:g}"
        mark = "[green]ok[/]" if row.ok else "[red]FAIL[/]"
        extra = f"  {escape(row.error)}" if row.error else ""
        out.print(f"{mark} {escape(row.agent)}{'=' + escape(row.model) if row.model else ''}  reward {reward}  "
                  f"{row.seconds:.1f}s  {escape(row.trajectory or '-')}{extra}")

    rows = run_smoke(agent or [], sandbox=sandbox, jobs_dir=jobs_dir, timeout_sec=timeout_sec, on_row=show)
    passed = sum(row.ok for row in rows)
    out.print(f"{passed}/{len(rows)} agents scored 1.0")
    raise typer.Exit(0 if rows and passed == len(rows) else 1)
