"""Reading finished jobs: ``bench results``, ``bench eval list|inspect|metrics|compare|compare-lift``,
``bench explain`` and ``bench bundle``.

Each command parses its flags, calls one function of ``benchflow.results``
and prints the document it returns (``--json``) or its text rendering. Bad
paths and flag values surface as ``UserError`` (one line, exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional, Tuple

import typer

results_cmd = typer.Typer(add_completion=False)
list_cmd = typer.Typer(add_completion=False)
inspect_cmd = typer.Typer(add_completion=False)
metrics_cmd = typer.Typer(add_completion=False)
compare_cmd = typer.Typer(add_completion=False)
compare_lift_cmd = typer.Typer(add_completion=False)
explain_cmd = typer.Typer(add_completion=False)
bundle_cmd = typer.Typer(add_completion=False)

_ATTEMPTS = "best (one attempt per task, as resume picks) or all"
_CONTROLS = "Count control runs (oracle, empty) in the denominators"
_K_HELP = ("k for pass@k and pass^k (repeatable; default 1, powers of two and multiples of five, "
           "using both trial and scored-only counts)")
_THRESHOLD = ("Count a scored trial as solved when reward >= this value (partial credit); "
              "default: solved = passed (reward 1)")


def _emit(text: str, out: Optional[Path] = None) -> None:
    """Print ``text``, or write it to ``out`` (atomically) and say where."""
    if out is None:
        typer.echo(text, nl=False)
        return
    from benchflow.util.atomic import write_text

    write_text(out, text)
    typer.echo(f"Wrote {out}", err=True)


def _render(document: Any, as_json: bool) -> str:
    from benchflow.results import render
    from benchflow.results.documents import Comparison, JobDocument, TrialDocument
    from benchflow.results.listing import JobList

    if as_json:
        return render.to_json(document)
    if isinstance(document, JobDocument):
        return render.render_job(document)
    if isinstance(document, TrialDocument):
        return render.render_trial(document)
    if isinstance(document, Comparison):
        return render.render_comparison(document)
    if isinstance(document, JobList):
        return render.render_list(document)
    raise TypeError(f"no rendering for {type(document).__name__}")


def _warn(lines: list[str]) -> None:
    for line in lines:
        typer.echo(f"warning: {line}", err=True)


@results_cmd.command(help="Summarize jobs; with two, compare them.\n\nWith no job, or a folder of jobs, it lists "
                          "the jobs (bench eval list); with one, it reads the job (bench eval inspect); with two, it "
                          "pairs them by task (bench eval compare).")
def results(
    jobs: Optional[List[str]] = typer.Argument(None, help="Job folders, or a folder of jobs (default: ./jobs); one "
                                               "job is read trial by trial, two are compared task by task"),
    as_json: bool = typer.Option(False, "--json", help="Print the benchflow.job document (one job) or the "
                                 "benchflow.comparison document (two)"),
    attempts: str = typer.Option("best", "--attempts", help=_ATTEMPTS),
    include_controls: bool = typer.Option(False, "--include-controls", help=_CONTROLS),
    by: Optional[str] = typer.Option(None, "--by", help="One job: also count per group, e.g. agent,model; two: "
                                     "pair on these keys too"),
) -> None:
    from benchflow.results.views import results_for

    document = results_for(jobs or [], attempts=attempts, include_controls=include_controls, by=by)
    if not as_json and hasattr(document, "caveats"):
        _warn(document.caveats)
    _emit(_render(document, as_json))


@list_cmd.command(help="List the jobs in a jobs folder, one row each, with their scores.")
def list_jobs(
    jobs_dir: Path = typer.Argument(Path("jobs"), help="Jobs directory to list (default: ./jobs)"),
    as_json: bool = typer.Option(False, "--json", help="Print the list as JSON"),
) -> None:
    from benchflow.results.listing import list_jobs as list_library

    _emit(_render(list_library(jobs_dir), as_json))


@inspect_cmd.command(help="Read a finished job or trial: denominators, one row per trial, or --json.\n\nThe same "
                          "data as bf.load_job / bf.load_trial; control runs (oracle, empty) are counted apart. "
                          "Reads files only.")
def inspect(
    path: str = typer.Argument(..., help="A job folder, a trial folder, a results.jsonl file, or a glob of folders"),
    as_json: bool = typer.Option(False, "--json", help="Print the benchflow.job (or benchflow.trial) JSON document"),
    trajectories: bool = typer.Option(False, "--trajectories", help="Include trajectories in the JSON"),
    verifier: bool = typer.Option(True, "--verifier/--no-verifier", help="Include verifier output (test logs) in "
                                  "the JSON"),
    attempts: str = typer.Option("best", "--attempts", help="best (one per task, as resume picks) or all"),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the output to this file"),
    by: Optional[str] = typer.Option(None, "--by", help="Also print denominators per group, e.g. agent,model"),
    include_controls: bool = typer.Option(False, "--include-controls", help=_CONTROLS),
    csv_path: Optional[Path] = typer.Option(None, "--csv", help="Also write one CSV row per trial to this file"),
) -> None:
    from benchflow.results import render
    from benchflow.results.documents import JobDocument
    from benchflow.results.views import inspect_path
    from benchflow.util.atomic import write_text

    document = inspect_path(path, attempts=attempts, include_controls=include_controls, by=by,
                            trajectories=trajectories, verifier=verifier)
    if csv_path is not None:
        trials = document.trials if isinstance(document, JobDocument) else [document.summary]
        write_text(csv_path, render.trials_csv(trials))
    text = _render(document, as_json)
    if not as_json and getattr(document, "branches", None):  # a branched trial: its forks and children too
        from benchflow.branch.view import render_view

        text += "\nBranches\n" + render_view(document.branches)
    _emit(text, out)


@metrics_cmd.command(help="Collect and display metrics from a jobs directory.\n\nOne row per trial, as bf.load_job "
                          "counts them; pass@k / pass^k pool a task's trials across every job folder under the "
                          "directory. Every figure counts every trial, an unscored one as a fail; with unscored "
                          "trials, the scored-only figures follow with their own n. Control runs are left out unless "
                          "--include-controls. The score has a 95% interval over tasks. A folder of several settings "
                          "gets one line per setting and no pooled score.")
def metrics(
    jobs_dir: Path = typer.Argument(..., help="Jobs directory to analyze"),
    benchmark: Optional[str] = typer.Option(None, "--benchmark", help="Benchmark name"),
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent name"),
    model: Optional[str] = typer.Option(None, "--model", help="Model name"),
    as_json: bool = typer.Option(False, "--json", help="Output as JSON"),
    k: Optional[List[int]] = typer.Option(None, "--k", help=_K_HELP),
    solve_threshold: Optional[float] = typer.Option(None, "--solve-threshold", help=_THRESHOLD),
    include_controls: bool = typer.Option(False, "--include-controls", help="Count control runs (oracle, "
                                          "empty/nop) in the solve rates and pass@k; a folder of only control runs "
                                          "counts them anyway"),
) -> None:
    from benchflow.results import render
    from benchflow.results.report import collect_metrics

    if k and any(value < 1 for value in k):
        raise typer.BadParameter("every --k must be 1 or more", param_hint="--k")
    report = collect_metrics(jobs_dir, benchmark=benchmark, agent=agent, model=model, ks=k or None,
                             solve_threshold=solve_threshold, include_controls=include_controls)
    _warn(report.warnings)
    _emit(render.to_json(report) if as_json else render.render_metrics(report))


@compare_cmd.command(help="Pair two jobs by task: rewards, deltas, fair denominators, setting checks.\n\nThe same "
                          "code as bf.compare. Each paired task is checked for comparable settings (task digest, "
                          "model, harness, dataset, reasoning effort, sandbox, sandbox user, timeout, agent "
                          "variables, prompts); declare the settings the comparison is about with --vary. Reads "
                          "files only.")
def compare(
    job_a: str = typer.Argument(..., help="Side A: a job folder, a trial, or a glob of folders"),
    job_b: str = typer.Argument(..., help="Side B"),
    as_json: bool = typer.Option(False, "--json", help="Print the benchflow.comparison JSON document"),
    labels: Optional[Tuple[str, str]] = typer.Option(None, "--labels", help="Names for the two sides"),
    vary: Optional[List[str]] = typer.Option(None, "--vary", help="A setting the comparison is about "
                                             "(repeatable), e.g. model"),
    on_mismatch: str = typer.Option("warn", "--on-mismatch", help="warn (default), raise (exit 1) or ignore an "
                                    "undeclared setting difference"),
    include_controls: bool = typer.Option(False, "--include-controls", help="Keep control runs (oracle, empty)"),
    attempts: str = typer.Option("best", "--attempts", help="best or all"),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the output to this file"),
    by: Optional[str] = typer.Option(None, "--by", help="Pair on these keys as well as the task, e.g. agent,model"),
    k: Optional[List[int]] = typer.Option(None, "--k", help="k for pass@k and pass^k over the paired tasks "
                                          "(repeatable)"),
    solve_threshold: Optional[float] = typer.Option(None, "--solve-threshold", help=_THRESHOLD),
) -> None:
    from benchflow.results.compare import SettingMismatchError
    from benchflow.results.compare import compare as compare_jobs

    try:
        comparison = compare_jobs(job_a, job_b, by=by, vary=vary or (), on_mismatch=on_mismatch,
                                  labels=labels if labels and all(labels) else None,
                                  include_controls=include_controls, attempts=attempts, ks=k or None,
                                  solve_threshold=solve_threshold)
    except SettingMismatchError as exc:
        _emit(_render(exc.comparison, as_json), out)
        raise
    if not as_json:
        _warn(comparison.caveats)
    _emit(_render(comparison, as_json), out)


@compare_lift_cmd.command(help="Compare paired baseline vs trained eval job directories.")
def compare_lift(
    baseline: Path = typer.Option(..., "--baseline", help="Baseline BenchFlow job directory."),
    trained: Path = typer.Option(..., "--trained", help="Trained BenchFlow job directory."),
    out: Path = typer.Option(..., "--out", help="Markdown report output path."),
    json_out: Path = typer.Option(..., "--json-out", help="JSON report output path."),
    bootstrap_samples: int = typer.Option(1000, "--bootstrap-samples", min=0,
                                          help="Bootstrap samples for paired delta confidence intervals."),
    bootstrap_seed: int = typer.Option(0, "--bootstrap-seed", help="Deterministic seed for bootstrap confidence "
                                       "intervals."),
    allow_duplicates: bool = typer.Option(False, "--allow-duplicate-first-by-path",
                                          help="Allow duplicate healthy task rollouts and keep the first by "
                                               "deterministic path order."),
) -> None:
    from benchflow.results.lift import compare_lift as lift
    from benchflow.results.lift import write_reports

    report = lift(baseline, trained, samples=bootstrap_samples, seed=bootstrap_seed,
                  allow_duplicates=allow_duplicates)
    write_reports(report, out, json_out)
    typer.echo(f"Paired tasks: {report['paired_count']}; pass rate delta {report['pass_rate_delta']}; "
               f"mean reward delta {report['mean_reward_delta']}")
    typer.echo(f"Wrote {out} and {json_out}")


@explain_cmd.command(help="Explain why a trial has no score: what happened, whose problem, what next.\n\nThe code "
                          "is the one the run summary names; without one, every code is listed. With --schema, "
                          "print the JSON Schema of a job-folder record instead.")
def explain(
    code: Optional[str] = typer.Argument(None, help="The code the run summary names, such as R212 or "
                                         "verifier_failure (omit to list every code); or a trial folder, to "
                                         "explain that trial."),
    as_json: bool = typer.Option(False, "--json", help="Print the page, or the list, as JSON."),
    schema: Optional[str] = typer.Option(None, "--schema", metavar="NAME", help="Print the JSON Schema of a "
                                         "record: result, config, timing, summary, evaluation or run-card."),
) -> None:
    from benchflow.results import explain as catalogue
    from benchflow.results.render import table, to_json

    if schema is not None:
        from benchflow.records.schemas import UnknownSchema, shipped

        if code is not None:
            raise UnknownSchema(f"--schema {schema}: give a code or --schema, not both")
        typer.echo(shipped(schema), nl=False)
        return
    if code is None:
        entries = catalogue.catalogue()
        if as_json:
            typer.echo(to_json([catalogue.as_json(e) for e in entries]), nl=False)
        else:
            typer.echo(table(("code", "fault", "what happened"),
                             [[e.code + (f" ({', '.join(e.aliases)})" if e.aliases else ""), e.fault, e.label]
                              for e in entries]))
        return
    if Path(code).is_dir():
        _, entry = catalogue.explain_trial(Path(code))
        if entry is None:
            typer.echo(f"{code}: scored, with no error to explain")
            return
    else:
        entry = catalogue.lookup(code)
    if as_json:
        typer.echo(to_json(catalogue.as_json(entry)), nl=False)
        return
    aliases = f" (also {', '.join(entry.aliases)})" if entry.aliases else ""
    typer.echo(f"{entry.code}{aliases}: {entry.label}\nWhose problem: {entry.fault}\n"
               f"What happened: {entry.happened}\nWhat next: {entry.next}")


@bundle_cmd.command(help="Write one zip of a run's evidence to share, redacted.\n\nPer trial the result, "
                         "trajectory, verifier output, reviews, regrades, artifacts and saved workspace; for a job "
                         "its run card, summary and report. Every text file is redacted. bundle.json lists each "
                         "file with its SHA-256 and what was masked, and what was left out.")
def bundle(
    path: Path = typer.Argument(..., help="A job folder, or one trial folder inside it"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Where to write the zip (default: "
                                       "<PATH>.bundle.zip)"),
    workspace: bool = typer.Option(True, "--workspace/--no-workspace", help="Include each trial's saved workspace "
                                   "(evidence/) when it has one"),
) -> None:
    from benchflow.results.bundle import bundle as write_bundle

    report = write_bundle(path, out, workspace=workspace)
    typer.echo(f"Wrote {report.out}: {len(report.files)} files, {report.masked_total} values masked, "
               f"{len(report.left_out)} left out (see bundle.json)")
