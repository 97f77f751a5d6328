"""``bench embodied report|export|verify|check-spec|robo-path``: embodied rollouts (robots and simulators).

Each command parses its arguments, calls one function of :mod:`benchflow.embodied` and prints its text (or
``--json``). A path that holds no job, or no embodied trial, and an invalid spec are one line on stderr, exit 2;
``verify`` exits 1 when a trial's files no longer match its verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

report_cmd = typer.Typer(add_completion=False)
export_cmd = typer.Typer(add_completion=False)
verify_cmd = typer.Typer(add_completion=False)
check_spec_cmd = typer.Typer(add_completion=False)
robo_path_cmd = typer.Typer(add_completion=False)

JOB = typer.Argument(..., metavar="JOB_DIR", help="A job folder (<jobs>/<job>), one trial folder, or a quoted glob of job folders "
                               "(e.g. the trial-NN repeats of --trials)")


def _notes(notes: list[str]) -> None:
    for note in notes:
        typer.echo(f"note: {note}", err=True)


@report_cmd.command(help="Per task: rewards by seed, mean, std, pass@k and reset reproducibility.")
def report(job: Path = JOB,
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON")) -> None:
    from benchflow.embodied.report import format_report, seed_report

    document = seed_report(job)
    if as_json:
        typer.echo(json.dumps(document, indent=2))
        return
    _notes(document["notes"])
    typer.echo(format_report(document))


@export_cmd.command(help="Write every trial's per-step transitions and episode index (steps.jsonl, episodes.jsonl).")
def export(job: Path = JOB,
           out: Path = typer.Option(..., "--out", "-o", help="The folder to write steps.jsonl and episodes.jsonl "
                                                             "into (created; both files are replaced)")) -> None:
    from benchflow.embodied.export import export_job

    done = export_job(job, out)
    _notes(done.notes)
    typer.echo(f"{done.episodes} episode(s), {done.steps} step(s) -> {done.out}")


@verify_cmd.command(help="Check each trial's files against its verdict now: record hashes, video copies, reward vs "
                         "the record.\n\nExits 1 when a trial's files do not match its verdict.")
def verify(job: Path = JOB,
           as_json: bool = typer.Option(False, "--json", help="Print every trial's checks as JSON")) -> None:
    from benchflow.embodied.verify import verify_path

    report = verify_path(job)
    if as_json:
        typer.echo(json.dumps(report.document(), indent=2))
    else:
        _notes(report.notes)
        for trial in report.trials:
            if trial.ok:
                typer.echo(f"ok    {trial.trial}")
            for problem in trial.problems:
                typer.echo(f"FAIL  {trial.trial}  {problem.check}: {problem.detail}")
        failed = sum(1 for t in report.trials if not t.ok)
        skipped = f" ({report.skipped} trial(s) without an episode record skipped)" if report.skipped else ""
        typer.echo(f"{len(report.trials)} embodied trial(s): {len(report.trials) - failed} ok, {failed} failed{skipped}")
    if not report.ok:
        raise typer.Exit(1)


@check_spec_cmd.command(help="Validate an embodiment spec.\n\nThe file is the spec (JSON), a saved `robo info "
                             "--json` answer or an episode record's episode.json.")
def check_spec(spec: Path = typer.Argument(..., metavar="SPEC", help="The embodiment spec JSON file")) -> None:
    from benchflow.embodied.spec import check_spec as check

    summary = check(spec)
    if summary.ignored:
        _notes([f"{spec}: not part of the spec, not checked: {', '.join(summary.ignored)}"])
    typer.echo(summary.line())


@robo_path_cmd.command(help="Print the path of the agent-side robo script (standard library only).\n\nCopy it into "
                            "an agent image as `robo` (it runs with any python3).")
def robo_path() -> None:
    from importlib.resources import files

    typer.echo(Path(str(files("benchflow.embodied").joinpath("robo.py"))).resolve())
