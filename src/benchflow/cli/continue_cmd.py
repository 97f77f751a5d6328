"""``bench eval continue`` and ``bench eval continue-batch`` (and their deprecated top-level spellings):
parse flags, plan, call :func:`benchflow.continue_run.run.continue_trials`, print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

CONTINUE_HELP = (
    "Resume a previous unfinished (timed-out) OpenHands run to completion.\n\n"
    "A fresh sandbox runs the original's agent on its task again; its model calls are answered, in order, with "
    "the responses recorded in the trial's trajectory/llm_trajectory.jsonl, so the agent redoes its own steps "
    "and rebuilds the workspace and its conversation; past the recording the calls go to the live model with no "
    "new prompt, and the task's verifier scores the result. The continued trial is a new trial folder (default "
    "<trial's job>/continued/<job>/), whose result.json names the original in its continued block; the "
    "original is never changed. Exit codes: 0 scored without an error; 1 the continuation errored, timed out "
    "again or diverged (--strict-divergence); 2 bad input; 130 interrupted.")

BATCH_HELP = (
    "Continue all timed-out OpenHands runs under a directory tree.\n\n"
    "Finds every trial folder whose result.json ends in timeout or idle_timeout and that has no finished "
    "continuation yet, continues each as bench eval continue does, and prints a JSON summary (total, "
    "succeeded, failed, skipped, outputs, skips, errors). Exit 1 when any continuation failed or could not "
    "start, 2 for bad input.")

PROXY_HELP = ("Replay proxy placement: auto, host, or sandbox. Here the replay runs in the model gateway on this "
              "machine, which every sandbox (Daytona and Modal too) reaches through its model bridge: auto is host, "
              "and sandbox is refused.")

continue_cmd = typer.Typer()
continue_batch_cmd = typer.Typer()


@continue_cmd.command(help=CONTINUE_HELP)
def continue_command(
    folder: Path = typer.Argument(..., help="Original run output folder (contains config.json + trajectory/llm_trajectory.jsonl)."),
    tasks_dir: Optional[Path] = typer.Option(None, "--tasks-dir", help="Directory holding the task source (instruction + verifier). Required unless the recorded task_path still exists on disk."),
    model: Optional[str] = typer.Option(None, "--model", help="Override the live-continuation model (default: the original run's model)."),
    timeout: Optional[int] = typer.Option(None, "--timeout", min=1, help="Wall-clock budget for the continuation, in seconds (default: the original run's timeout)."),
    output: Optional[Path] = typer.Option(None, "--output", help="Output jobs dir for the new run (default: <orig-parent>/continued)."),
    require_timeout: bool = typer.Option(False, "--require-timeout/--no-require-timeout", help="Refuse runs whose recorded status is not a timeout."),
    strict_divergence: bool = typer.Option(False, "--strict-divergence/--no-strict-divergence", help="Abort if replay leaves the original rails (message-count mismatch) instead of warning."),
    replay_only: bool = typer.Option(False, "--replay-only/--no-replay-only", help="Rebuild the env via replay and stop at the cut-point (no live model needed); useful for testing."),
    proxy_mode: str = typer.Option("auto", "--proxy-mode", help=PROXY_HELP),
) -> None:
    from benchflow.continue_run.plan import ContinueOptions, check_proxy_mode, plan_continuation
    from benchflow.continue_run.run import continue_trials
    from benchflow.continue_run.source import read_source

    options = ContinueOptions(tasks_dir=tasks_dir, model=model, timeout_sec=timeout, output=output,
                              strict_divergence=strict_divergence, replay_only=replay_only, proxy_mode=proxy_mode)
    check_proxy_mode(proxy_mode)
    continuation = plan_continuation(read_source(folder, require_timeout=require_timeout), options)
    for note in continuation.notes:
        typer.echo(f"note: {note}", err=True)
    outcome = continue_trials([continuation], options)
    done = outcome.continued[0]
    result = done.result or {}
    if result.get("error_category") == "replay_divergence":
        from benchflow.continue_run.mode import ReplayDiverged

        raise ReplayDiverged(f"{folder}: {result['error']}; recorded in {done.trial}")
    for line in _report(done.trial, result):
        typer.echo(line)
    raise typer.Exit(outcome.exit_code)


@continue_batch_cmd.command(help=BATCH_HELP)
def continue_batch_command(
    root: Path = typer.Argument(..., help="Run folder or directory tree containing timeout run folders (config.json + trajectory/llm_trajectory.jsonl)."),
    tasks_dir: Optional[Path] = typer.Option(None, "--tasks-dir", help="Directory holding task sources; required unless recorded task_path exists."),
    model: Optional[str] = typer.Option(None, "--model", help="Override live-continuation model."),
    timeout: Optional[int] = typer.Option(None, "--timeout", min=1, help="Wall-clock budget per continuation."),
    output: Optional[Path] = typer.Option(None, "--output", help="Output jobs dir for continued runs."),
    concurrency: int = typer.Option(100, "--concurrency", min=1, help="Maximum number of continuation runs in flight."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Limit discovered timeout folders."),
    strict_divergence: bool = typer.Option(False, "--strict-divergence/--no-strict-divergence", help="Abort a run if replay leaves the original rails."),
    proxy_mode: str = typer.Option("auto", "--proxy-mode", help=PROXY_HELP),
) -> None:
    from benchflow.continue_run.discover import find_timed_out
    from benchflow.continue_run.plan import ContinueOptions, check_proxy_mode, plan_continuation
    from benchflow.continue_run.run import Continued, ContinueOutcome, continue_trials
    from benchflow.continue_run.source import read_source
    from benchflow.errors import BenchError, JobFolderError

    check_proxy_mode(proxy_mode)
    if not root.is_dir():
        raise JobFolderError(f"{root}: no such folder; give a trial folder or a folder of jobs")
    options = ContinueOptions(tasks_dir=tasks_dir, model=model, timeout_sec=timeout, output=output,
                              strict_divergence=strict_divergence, proxy_mode=proxy_mode)
    found = find_timed_out(root, output=output, limit=limit)
    planned, refused = [], []
    for trial in found.trials:
        try:
            planned.append(plan_continuation(read_source(trial, require_timeout=True), options))
        except BenchError as exc:  # one trial that cannot start must not cost the others theirs
            typer.echo(f"cannot continue {trial}: {exc}", err=True)
            refused.append(Continued(source=trial, refused=str(exc)))
    typer.echo(f"continuing {len(planned)} timed-out trial(s) under {root} (concurrency {concurrency})", err=True)
    outcome = continue_trials(planned, options, concurrency=concurrency, on_event=_progress) if planned \
        else ContinueOutcome()
    outcome.continued.extend(refused)
    typer.echo(json.dumps(_summary(outcome.continued, found.skipped), indent=2))
    raise typer.Exit(outcome.exit_code)


def _progress(event: dict[str, Any]) -> None:
    if event["type"] == "continuing":
        for note in event["notes"]:
            typer.echo(f"note: {note}", err=True)
        typer.echo(f"continuing {event['source']} ({event['recorded_calls']} recorded call(s)) -> {event['trial']}",
                   err=True)


def _report(trial: Path | None, result: dict[str, Any]) -> list[str]:
    """What ``bench eval continue`` prints: where the continued trial is, how the replay went, its verdict."""
    continued = result.get("continued") or {}
    reward = (result.get("rewards") or {}).get("reward")
    lines = [f"continued run written to {trial}",
             f"replayed {continued.get('replayed_calls', 0)} of {continued.get('recorded_calls', 0)} recorded call(s); "
             f"{continued.get('live_calls', 0)} live call(s); {len(continued.get('divergences') or [])} divergence(s)",
             f"reward: {reward}"]
    for divergence in continued.get("divergences") or []:
        lines.append(f"divergence at recorded call {divergence['call']} (line {divergence['line']}): sent "
                     f"{divergence['sent_messages']} messages, recorded {divergence['recorded_messages']}")
    if continued.get("replay_only"):
        lines.append("replay-only: " + ("stopped at the cut point" if continued.get("cut_point_reached")
                                        else "the cut point was not reached"))
    for key in ("error", "verifier_error"):
        if result.get(key):
            lines.append(f"{key}: {str(result[key]).splitlines()[0]}")
    return lines


def _summary(continued: list[Any], skipped: list[tuple[Path, str]]) -> dict[str, Any]:
    """The batch's JSON summary (the keys the original BenchFlow printed)."""
    ok = [c for c in continued if c.ok]
    failed = [c for c in continued if not c.ok]
    return {"total": len(continued), "succeeded": len(ok), "failed": len(failed), "skipped": len(skipped),
            "outputs": [str(c.trial) for c in ok],
            "skips": [{"folder": str(folder), "reason": why} for folder, why in skipped],
            "errors": [{"folder": str(c.source), "output": str(c.trial) if c.trial else None,
                        "error": c.refused or (c.result or {}).get("error") or (c.result or {}).get("verifier_error")
                        or "no reward"} for c in failed]}
