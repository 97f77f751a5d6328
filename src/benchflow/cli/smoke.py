"""``bench eval smoke``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

smoke_cmd = typer.Typer()


@smoke_cmd.command(help="Run a bundled hello-world task once per credentialed agent, one at a time.\n\n"
                        "Checks the sandbox first, then runs each agent in its own bench eval run, prints agent, "
                        "reward, time and trajectory path, and exits 1 unless every run scores 1.0.")
def smoke(
    agent: Optional[list[str]] = typer.Option(None, "--agent", help="Agent to smoke, as NAME or NAME=MODEL; repeatable. Default: every agent with a credential on this machine (bench agents)."),
    sandbox: str = typer.Option("docker", "--sandbox", help="Sandbox: docker (default), remote-docker or local."),
    jobs_dir: Path = typer.Option(Path("jobs/smoke"), "--jobs-dir", help="Parent directory; each smoke writes a timestamped folder here."),
    timeout_sec: int = typer.Option(900, "--timeout-sec", min=1, help="Kill a run that takes longer than this many seconds."),
) -> None:
    from rich.console import Console
    from rich.markup import escape

    from benchflow.jobs.smoke import run_smoke

    out = Console(highlight=False)

    def show(row) -> None:
        reward = "n/a" if row.reward is None else f"{row.reward:g}"
        mark = "[green]ok[/]" if row.ok else "[red]FAIL[/]"
        extra = f"  {escape(row.error)}" if row.error else ""
        out.print(f"{mark} {escape(row.agent)}{'=' + escape(row.model) if row.model else ''}  reward {reward}  "
                  f"{row.seconds:.1f}s  {escape(row.trajectory or '-')}{extra}")

    rows = run_smoke(agent or [], sandbox=sandbox, jobs_dir=jobs_dir, timeout_sec=timeout_sec, on_row=show)
    passed = sum(row.ok for row in rows)
    out.print(f"{passed}/{len(rows)} agents scored 1.0")
    raise typer.Exit(0 if rows and passed == len(rows) else 1)
