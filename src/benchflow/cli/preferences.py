"""``bench preferences pairs|import|rank``: human preferences and rubric scores on finished trials.

Flags are parsed here; the work is in :mod:`benchflow.preferences`. Errors are
``BenchError``s: bad input exits 2 with one line, ``rank`` on a store whose
pairs still lack votes exits 1 (``--provisional`` ranks anyway).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

pairs_cmd = typer.Typer(add_completion=False)
import_cmd = typer.Typer(add_completion=False)
rank_cmd = typer.Typer(add_completion=False)

STORE_HELP = "The preference store bench preferences pairs made."


@pairs_cmd.command(help="Make the store and the blind assignment.")
def pairs(
    jobs: list[Path] | None = typer.Argument(None, help="Job or trial folders whose outputs to pair (none with "
                                                "only --items)."),
    store: Path = typer.Option(..., "--store", help="A new folder for the preference store. Required."),
    out: Path = typer.Option(..., "--out", help="The file to write the blind pairs to, for the raters' tool. "
                             "Required."),
    output: str = typer.Option("artifacts", "--output", help="Which folder of each trial the raters compare, "
                               "relative to the trial (artifacts, or evidence/workspace with --freeze-workspace)."),
    per_task: int | None = typer.Option(None, "--per-task", help="At most this many pairs per task."),
    seed: int | None = typer.Option(None, "--seed", help="Seed for sampling and sides (default: random, "
                                       "recorded)."),
    rubric: Path | None = typer.Option(None, "--rubric", help="A rubric JSON file to freeze for aspects and "
                                          "scores."),
    bundle: Path | None = typer.Option(None, "--bundle", help="Where to copy the outputs under their opaque ids "
                                          "for the rating tool (default: <store>-outputs beside the store)."),
    keep_sides: bool = typer.Option(False, "--keep-sides", help="Do not shuffle which output is shown on the "
                                    "left."),
    items: Path | None = typer.Option(None, "--items", help="A JSON-lines file of outputs made outside "
                                         "BenchFlow (a golden, a remix), each with its task, output folder and arm "
                                         "labels; they pair with the trials of their task's version."),
    condition: str | None = typer.Option(None, "--condition", help="A condition to label every trial's output "
                                            "with (one-shot, say); --items rows carry their own."),
    entry: str | None = typer.Option(None, "--entry", help="The page to open in each output, such as "
                                        "index.html; an output without it is left out."),
    golden: str = typer.Option("side", "--golden", help="Whether a golden from --items is a side in pairs (side) "
                               "or only the bar a rater's tool shows (bar)."),
) -> None:
    from benchflow.preferences.make import PairsOptions, make_pairs

    report = make_pairs(list(jobs or []), PairsOptions(
        store=store, out=out, output=output, per_task=per_task, seed=seed, rubric=rubric, bundle=bundle,
        keep_sides=keep_sides, items=items, condition=condition, entry=entry, golden=golden))
    for note in report.notes:
        typer.echo(f"note: {note}", err=True)
    typer.echo(f"Paired {report.outputs} outputs of {report.tasks} task(s) into {report.pairs} blind pairs "
               f"(seed {report.seed}).")
    typer.echo(f"Store: {report.store}")
    typer.echo(f"Pairs: {report.out}")
    typer.echo(f"Outputs: {report.bundle}")
    typer.echo(f"Rate them: bench view --rate {report.store}")


@import_cmd.command(help="Check every vote in the file, then add the new ones to the store.")
def import_(
    store: Path = typer.Argument(..., metavar="STORE", help=STORE_HELP),
    votes: Path = typer.Option(..., "--votes", help="Votes as JSON lines or CSV (see docs/tasks/human-preferences.md for "
                               "the fields). Required."),
    source: str | None = typer.Option(None, "--source", help="The tool that collected them, recorded on each "
                                         "vote."),
    skip_unknown: bool = typer.Option(False, "--skip-unknown", help="Leave out votes on outputs the store doesn't "
                                      "have, instead of refusing the file."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check every vote and say what would change; write "
                                 "nothing."),
) -> None:
    from benchflow.preferences.votes_file import import_votes

    report = import_votes(store, votes, source=source, skip_unknown=skip_unknown, dry_run=dry_run)
    for note in report.notes:
        typer.echo(f"skipped: {note} is not in the store", err=True)
    verb = "Would add" if dry_run else "Added"
    typer.echo(f"Checked {report.checked} vote(s): {verb} {report.added} new, "
               f"{report.already} already in the store, {report.unknown} on unknown outputs left out.")


def _interval(row: dict[str, Any]) -> str:
    return "-" if row["low"] is None else f"{row['low']:.0f}..{row['high']:.0f}"


def _print_table(table: dict[str, Any], min_agreement: float | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True)
    console.print(f"Raters: {', '.join(table['raters'])} · {table['votes']} vote(s), {table['ties']} tie(s), "
                  f"{table['skips']} skip(s) · intervals resample by {table['cluster']}")
    grid = Table(box=None, pad_edge=False)
    for column in ("ARM", "RATING", "95% INTERVAL", "GAMES", "W", "L", "T"):
        grid.add_column(column, overflow="fold")
    for row in table["ratings"]:
        grid.add_row(row["name"], f"{row['rating']:.0f}", _interval(row), str(row["games"]), str(row["wins"]),
                     str(row["losses"]), str(row["ties"]))
    if table["ratings"]:
        console.print(grid)
    agree = table["agreement"]
    if agree["raw"] is None:
        console.print("Agreement: no pair has two raters yet")
    else:
        line = f"Agreement: {agree['raw']:.2f} raw over {agree['comparisons']} rater pair(s)"
        if min_agreement is not None:
            line += f"; minimum {min_agreement:g} {'met' if agree['met'] else 'NOT met'}"
        console.print(line)
    for rater in agree["raters"]:
        if rater["below"]:
            console.print(f"  rater {rater['rater']} agrees {rater['agreement']:.2f} (below {min_agreement:g}) "
                          f"over {rater['comparisons']} comparison(s)")


@rank_cmd.command(help="Ratings from the store's votes (also written to ratings.v1.json).")
def rank(
    store: Path = typer.Argument(..., metavar="STORE", help=STORE_HELP),
    by: str = typer.Option("agent+model", "--by", help="Rate each agent, model, agent+model or condition."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Resamples for the 95% intervals (0: none)."),
    seed: int = typer.Option(0, "--seed", help="Seed for the resampling."),
    min_agreement: float | None = typer.Option(None, "--min-agreement", help="Raw agreement (not kappa) to "
                                                  "check the raters against (0 to 1); rank says whether it is met."),
    raters_per_pair: int | None = typer.Option(None, "--raters-per-pair", help="Raters each pair should have."),
    raters: str | None = typer.Option(None, "--raters", help="Whose votes to rate together: person, guest, "
                                         "model, or several joined by commas (default: people; the others get "
                                         "tables of their own)."),
    cluster: str = typer.Option("auto", "--cluster", help="What the intervals resample: vote, rater, task or "
                                "rater+task (auto: raters and tasks, when there are several of each)."),
    provisional: bool = typer.Option(False, "--provisional", help="Show the ratings before every pair has a vote."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    from benchflow.collector.store import db_path
    from benchflow.preferences.rank import RATINGS_NAME, RankOptions, parse_raters
    from benchflow.preferences.rank import rank as rank_store

    opts = RankOptions(by=by, bootstrap=bootstrap, seed=seed, min_agreement=min_agreement,
                       raters_per_pair=raters_per_pair, raters=parse_raters(raters), cluster=cluster,
                       provisional=provisional)
    document = rank_store(store, opts)
    if as_json:
        typer.echo(json.dumps(document, indent=2))
        return
    pairs = document["pairs"]
    status = "" if document["complete"] else " (PROVISIONAL: not every pair has its votes yet)"
    typer.echo(f"Ratings by {by} on the Elo scale, {pairs['answered']} of {pairs['total']} pairs answered{status}")
    for n, table in enumerate(document["tables"]):
        if n:
            typer.echo("")
        _print_table(table, min_agreement)
    typer.echo(f"Written: {db_path(store).parent / RATINGS_NAME}")
