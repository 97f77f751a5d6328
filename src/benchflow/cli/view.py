"""``bench view`` / ``bench eval view``: serve a trial, job or trajectory in the browser."""

from __future__ import annotations

from pathlib import Path

import typer

from benchflow.errors import UserError

view_cmd = typer.Typer(add_completion=False)


@view_cmd.command(help="View a trial or session trajectory in the browser.")
def view(
    rollout_dir: str | None = typer.Argument(
        None, metavar="ROLLOUT_DIR",
        help="Rollout directory, job directory, trajectory JSONL file, or an hf://<org>/<dataset> "
             "trajectory dataset (optionally with /subpath)"),
    port: int = typer.Option(8888, "--port", help="Server port"),
    confirm: bool = typer.Option(
        False, "--confirm",
        help="Show an Approve & submit / Not this one bar on the page; print DECISION: approved|rejected "
             "and exit 0 on approve, 3 on reject."),
    redaction_summary: str | None = typer.Option(
        None, "--redaction-summary",
        help="Masked-secret breakdown shown in the --confirm bar, e.g. '2 API keys, 1 bearer token' "
             "(lift it from bench traj upload PATH --dry-run). Display-only; no effect without --confirm."),
    rate: Path | None = typer.Option(
        None, "--rate", metavar="STORE",
        help="Serve the blind rating page for a preference store (bench preferences pairs) instead: two outputs "
             "side by side under opaque ids, keyboard shortcuts, each vote written to the store."),
    export: str | None = typer.Option(
        None, "--export", metavar="OUT.html",
        help="Write the view as one self-contained HTML file instead of serving it: data inline and redacted, "
             "home folders shown as ~, no external requests; opens offline in any browser."),
) -> None:
    if rate is not None:
        if rollout_dir is not None or export is not None or confirm:
            raise UserError("--rate STORE serves the rating page alone; leave out ROLLOUT_DIR, --export and --confirm")
        from benchflow.viewer.rating import serve_rating

        raise typer.Exit(serve_rating(rate, port=port))
    if rollout_dir is None:
        raise UserError("give ROLLOUT_DIR (a rollout, job or trajectory), or --rate STORE for the rating page")
    if rollout_dir.startswith("hf://"):
        from benchflow.hf.view_source import fetch

        rollout_dir = str(fetch(rollout_dir))
    if export is not None:
        from benchflow.viewer.export import export_html

        report = export_html(rollout_dir, export)
        pages = f"{report.trial_pages} trial page(s)" + (
            f" (the other {report.trials - report.trial_pages} trials are in the tables and charts only)"
            if report.trials > report.trial_pages else "")
        typer.echo(f"Wrote {report.path} ({report.size / 1024:.0f} KiB): {report.jobs} job(s), {pages}.")
        return
    from benchflow.viewer.server import serve

    raise typer.Exit(serve(rollout_dir, port=port, confirm=confirm, redaction_summary=redaction_summary))
