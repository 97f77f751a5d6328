"""``bench hub publish`` and ``bench hub push``: write to a BenchFlow Hub (token from $BENCHFLOW_HUB_TOKEN)."""

from __future__ import annotations

from pathlib import Path

import typer

publish_cmd = typer.Typer(add_completion=False)
push_cmd = typer.Typer(add_completion=False)

_HUB_HELP = "Hub address (default: $BENCHFLOW_HUB_URL)"


@publish_cmd.command(help="Publish a folder of tasks as an immutable dataset version on a BenchFlow Hub.\n\nEach "
                          "task is uploaded as a tar.gz with its content digest (as bench tasks digest computes "
                          "it); the hub recomputes every digest and refuses a version that already exists. Needs "
                          "BENCHFLOW_HUB_TOKEN.")
def publish(
    tasks_dir: Path = typer.Argument(..., metavar="TASKS_DIR", help="Folder holding one folder per task"),
    name: str = typer.Option(..., "--name", help="The version to publish, as org/name@version (e.g. "
                             "robouse/metaworld-sample@0.6.1)"),
    hub: str | None = typer.Option(None, "--hub", help=_HUB_HELP),
    description: str | None = typer.Option(None, "--description", help="One line on what it is"),
    license_: str | None = typer.Option(None, "--license", help="The tasks' license, as an SPDX expression (e.g. "
                                        "Apache-2.0 AND MIT)"),
    kind: str | None = typer.Option(None, "--kind", help="What its tasks are, e.g. embodied"),
    source_repo: str | None = typer.Option(None, "--source-repo", help="Where the tasks came from (a repository "
                                           "URL)"),
    source_commit: str | None = typer.Option(None, "--source-commit", help="The commit they came from"),
    exporter: str | None = typer.Option(None, "--exporter", help="What wrote the packages, e.g. "
                                        "'robouse-export@d05027fb' (the tool and its commit)"),
) -> None:
    from benchflow.hub.client import HubClient, hub_url
    from benchflow.hub.names import parse_ref
    from benchflow.hub.publish import publish as run

    ref = parse_ref(name, "--name")
    meta = {"description": description, "license": license_, "kind": kind, "source_repo": source_repo,
            "source_commit": source_commit, "exporter": exporter}
    with HubClient(hub_url(hub)) as client:
        done = run(client, tasks_dir, ref, meta, progress=typer.echo)
    typer.echo(f"Published {done.name} ({len(done.tasks)} tasks): {done.url}")


@push_cmd.command(help="Push a finished run (traces, results) to a BenchFlow Hub.\n\nThe job is bundled as bench "
                       "bundle does it (redacted, without saved workspaces); the hub validates every trial's "
                       "records against BenchFlow's JSON Schemas and, for a dataset version, each task's digest, "
                       "then lists the run on the version's leaderboard. Needs BENCHFLOW_HUB_TOKEN.")
def push(
    job_dir: Path = typer.Argument(..., metavar="JOB_DIR", help="A job folder (jobs/<job>) holding one finished "
                                   "run, or the run (jobs/<job>/<time>)"),
    hub: str | None = typer.Option(None, "--hub", help=_HUB_HELP),
    dataset: str | None = typer.Option(None, "--dataset", help="The dataset version the job ran, "
                                       "org/name@version (default: what the job recorded)"),
    label: str | None = typer.Option(None, "--label", help="A label for the run on the Hub"),
) -> None:
    from benchflow.hub.client import HubClient, hub_url
    from benchflow.hub.names import parse_ref
    from benchflow.hub.push import push as run

    if dataset is not None:
        dataset = str(parse_ref(dataset, "--dataset"))
    with HubClient(hub_url(hub)) as client:
        answer = run(client, job_dir, dataset, label)
    typer.echo(f"Pushed run {answer['id']} ({answer['job_name']}, {answer['n_trials']} trials)"
               + (f" to {answer['dataset']}" if answer.get("dataset") else "") + f": {answer['url']}")
    for entry in answer.get("entries", []):
        rate = "—" if entry["solve_rate"] is None else f"{entry['solve_rate']:.3f}"
        typer.echo(f"  {entry['agent'] or '—'} {entry['model'] or '—'}: solve rate {rate} over "
                   f"{entry['tasks']} tasks")
