"""``bench hub serve``: run a BenchFlow Hub (datasets, runs, leaderboards, trajectories)."""

from __future__ import annotations


import typer

serve_cmd = typer.Typer(add_completion=False)


@serve_cmd.command(help="Serve a BenchFlow Hub: datasets, runs, leaderboards and trajectories.\n\nThe database "
                        "is upgraded to the latest schema before serving. Reads are public; publishing, pushing "
                        "and uploading need a per-user API token: --create-token USER prints a new one (stored "
                        "hashed) and exits; clients read it from BENCHFLOW_HUB_TOKEN.")
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0 for every interface)"),
    port: int = typer.Option(8080, "--port", help="Port to listen on (0: any free port, printed)"),
    db: str | None = typer.Option(None, "--db", envvar="BENCHFLOW_HUB_DB",
                                     help="Database URL: sqlite:///PATH or postgresql://USER@HOST:PORT/DB (a "
                                          "password goes in PGPASSWORD or ~/.pgpass, not here) [default: "
                                          "sqlite:///$XDG_DATA_HOME/benchflow/hub/hub.sqlite3]"),
    blobs: str | None = typer.Option(None, "--blobs", help="Folder for task archives, run bundles and "
                                        "trajectories, or az://CONTAINER for an Azure Blob Storage container "
                                        "(connection from AZURE_STORAGE_CONNECTION_STRING) [default: "
                                        "$XDG_DATA_HOME/benchflow/hub/blobs]"),
    create_token: str | None = typer.Option(None, "--create-token", metavar="USER",
                                               help="Print a new API token for USER (created if new) and exit"),
) -> None:
    from benchflow.hub.server import open_hub
    from benchflow.hub.server import serve as run

    hub = open_hub(db, blobs)
    if create_token is not None:
        from benchflow.hub.names import TASK_NAME
        from benchflow.hub.tokens import create_token as make

        if not TASK_NAME.match(create_token):
            raise typer.BadParameter("a user name is letters, digits, '.', '_' and '-'", param_hint="--create-token")
        token = make(hub.engine, create_token)
        typer.echo(token)
        typer.echo(f"A new token for {create_token}; it is shown once. Give it to the client as "
                   "BENCHFLOW_HUB_TOKEN (in the environment, never on a command line).", err=True)
        return
    run(hub, host, port)
