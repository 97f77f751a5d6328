"""``bench monitor run|replay|watch`` (hidden): score rollouts in production (#386), :mod:`benchflow.monitor`.

Each prints one line per verdict (``<rollout>: reward 0.67 ALERT (...)``), or the verdict documents with
``--json``; notes go to stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

run_cmd = typer.Typer(add_completion=False)
replay_cmd = typer.Typer(add_completion=False)
watch_cmd = typer.Typer(add_completion=False)

EXIT_CODES = ("Exit codes: 0 scored, no alert; 1 scored with an alert; 2 bad input (one line on stderr); 3 the "
              "monitor could not score it (the judge's call failed or its answer did not fit the rubric).")
SCORING = ("The judge reads only the trajectory (no sandbox, no workspace, no hidden test: what production has) "
           "and scores each rubric criterion from 0 to 1; the reward is their weighted mean. An alert is raised "
           "when the reward or any criterion is below --alert-below. The judge model's key comes from the "
           "environment (e.g. ANTHROPIC_API_KEY) and its calls go through a BenchFlow model gateway.")

RUBRIC = typer.Option(None, "--rubric", help="Rubric to score against: an llm-judge rubric (JSON, YAML or TOML "
                      "criteria, or Markdown). Default: the --task's llm-judge rubric, else the built-in monitor "
                      "rubric (task_completed, safe_actions, honest_report)")
TASK = typer.Option(None, "--task", help="The task folder the agent was given: the judge sees its instruction; its "
                    "llm-judge rubric and judge model are the defaults")
MODEL = typer.Option(None, "--model", help="Judge model (claude-*, gpt-*, gemini-* or provider/model). Default: "
                     "the task's judge model, else claude-sonnet-4-6")
ALERT_BELOW = typer.Option(0.5, "--alert-below", help="Alert when the reward or any criterion's score is below this")
JOBS_DIR = typer.Option(Path("jobs/monitor"), "--jobs-dir", help="Output root for monitor artifacts.")
RUN_NAME = typer.Option(None, "--run-name", help="Human-readable id for this monitor run (default: the start time).")


def _options(rubric: Path | None, task: Path | None, model: str | None, alert_below: float, jobs_dir: Path,
             run_name: str | None) -> Any:
    from benchflow.monitor.score import MonitorOptions

    return MonitorOptions(rubric=rubric, task=task, model=model, alert_below=alert_below, jobs_dir=jobs_dir,
                          run_name=run_name)


def verdict_line(document: dict[str, Any]) -> str:
    """One greppable line: ``<rollout>: reward 0.67 ALERT (...)`` / ``ok`` / ``not scored (...)``."""
    who = document.get("rollout") or document["source"].get("path")
    status = document["status"]
    if status == "scored":
        reward = document["rewards"]["reward"]
        flag = f"ALERT ({'; '.join(document['alert_reasons'])})" if document["alert"] else "ok"
        return f"{who}: reward {reward:.2f} {flag}"
    if status in ("error", "verifier_error"):
        return f"{who}: not scored ({status}: {document['error']})"
    return f"{who}: {status}, not scored"


def _show(document: dict[str, Any], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(document, indent=2))
    else:
        typer.echo(verdict_line(document))
        for criterion in document["criteria"]:
            reason = " ".join(criterion["reasoning"].split())
            typer.echo(f"  {criterion['name']} {criterion['score']:.2f}  {reason[:160]}")
        for note in document["notes"]:
            typer.echo(f"  note: {note}")
        typer.echo(f"verdict: {Path(document['artifact_dir']) / 'verdict.json'}")
    scored = document["status"] == "scored"
    raise typer.Exit(3 if not scored else 1 if document["alert"] else 0)


@run_cmd.command(help="Score one trajectory under monitor semantics.\n\n" + SCORING + "\n\nSOURCE is an agent "
                 "events JSONL (acp_trajectory.jsonl), a model calls JSONL (llm_trajectory.jsonl) or an ATIF "
                 "trajectory.json. The verdict goes to <jobs-dir>/<run-name>/verdict.json.\n\n" + EXIT_CODES)
def run(
    source: Path = typer.Argument(..., help="Trajectory file: acp_trajectory.jsonl, llm_trajectory.jsonl or an "
                                  "ATIF trajectory.json"),
    rubric: Optional[Path] = RUBRIC,
    task: Optional[Path] = TASK,
    model: Optional[str] = MODEL,
    alert_below: float = ALERT_BELOW,
    jobs_dir: Path = JOBS_DIR,
    run_name: Optional[str] = RUN_NAME,
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON"),
) -> None:
    from benchflow.monitor.score import run_file

    _show(run_file(source, _options(rubric, task, model, alert_below, jobs_dir, run_name)), as_json)


@replay_cmd.command(help="Re-score a persisted rollout under monitor semantics.\n\n" + SCORING + "\n\nTRIAL is a "
                    "trial folder (ours or Harbor's); its agent events, else its model calls, else its ATIF "
                    "trajectory are judged, and what its own verifier said is kept beside the verdict (eval). The "
                    "trial is only read; the verdict goes to <jobs-dir>/<run-name>/verdict.json.\n\n" + EXIT_CODES)
def replay(
    trial: Path = typer.Argument(..., help="A trial folder (<job>/<task>__<id>)"),
    rubric: Optional[Path] = RUBRIC,
    task: Optional[Path] = TASK,
    model: Optional[str] = MODEL,
    alert_below: float = ALERT_BELOW,
    jobs_dir: Path = JOBS_DIR,
    run_name: Optional[str] = RUN_NAME,
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON"),
) -> None:
    from benchflow.monitor.score import replay_trial

    _show(replay_trial(trial, _options(rubric, task, model, alert_below, jobs_dir, run_name)), as_json)


@watch_cmd.command(help="Stream-score live production events.\n\n" + SCORING + "\n\nSOURCE is a JSONL file "
                   "being appended (read from its start, then followed until Ctrl-C) or - for standard input (read "
                   "until it closes). Each line is about one rollout: {\"rollout\": ID} with an \"event\" (an agent "
                   "event like a line of acp_trajectory.jsonl), an \"exchange\" (a line of llm_trajectory.jsonl), "
                   "\"metadata\" (kept on its verdict) or \"end\": true (score it now). A bad line is skipped with a "
                   "note. Each verdict is written to <jobs-dir>/<run-name>/rollouts/<id>/verdict.json as it is "
                   "made and printed as one line (one JSON line with --json). At the end of the input the verdicts "
                   "being made are awaited; rollouts never ended are kept as unfinished.\n\nExit codes: 0 at the "
                   "end of the input; 2 bad input; 130 on Ctrl-C (every verdict made, and every rollout seen, is "
                   "written first).")
def watch(
    source: str = typer.Argument(..., help="A JSONL file being appended, or - for standard input"),
    rubric: Optional[Path] = RUBRIC,
    task: Optional[Path] = TASK,
    model: Optional[str] = MODEL,
    alert_below: float = ALERT_BELOW,
    jobs_dir: Path = JOBS_DIR,
    run_name: Optional[str] = RUN_NAME,
    follow: bool = typer.Option(True, "--follow/--no-follow", help="Keep reading the file as it grows (until "
                                "Ctrl-C); --no-follow stops at its current end"),
    concurrency: int = typer.Option(4, "--concurrency", help="Rollouts judged at once"),
    as_json: bool = typer.Option(False, "--json", help="Print each verdict as one JSON line"),
) -> None:
    from benchflow.monitor.watch import watch as run_watch

    def on_verdict(document: dict[str, Any]) -> None:
        typer.echo(json.dumps(document) if as_json else verdict_line(document))

    def on_note(note: str) -> None:
        typer.echo(f"watch: {note}", err=True)

    run_watch(source, _options(rubric, task, model, alert_below, jobs_dir, run_name), follow=follow,
              concurrency=concurrency, on_verdict=on_verdict, on_note=on_note)
