"""``bench hub serve``: open the database (upgrading it), the blob store, and serve."""

from __future__ import annotations

import os
import re
from pathlib import Path

from benchflow.errors import UserError


def data_home() -> Path:
    """Where a hub keeps its database and blobs by default: ``$XDG_DATA_HOME/benchflow/hub``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "benchflow" / "hub"


def open_hub(db: str | None, blobs: str | Path | None):
    """The hub's engine (upgraded to the latest schema step) and blob store.

    Raises:
        UserError: the hub extra is not installed, or the database cannot be opened (exit 2).
    """
    try:
        import sqlalchemy  # noqa: F401
    except ImportError as exc:
        raise UserError("bench hub serve needs the hub extra: pip install 'benchflow[hub]'") from exc
    from sqlalchemy.exc import OperationalError

    from .app import Hub
    from .blobs import FilesystemBlobStore
    from .blobs_azure import SCHEME as AZURE
    from .database import engine_for
    from .migrations import upgrade

    home = data_home()
    engine = engine_for(db or f"sqlite:///{home / 'hub.sqlite3'}")
    try:
        upgrade(engine)
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise UserError(f"--db: cannot open the hub database ({reason}); check the URL and that the server runs") \
            from exc
    if str(blobs or "").startswith(AZURE):
        from .blobs_azure import AzureBlobStore

        container = str(blobs)[len(AZURE):]
        if not re.fullmatch(r"[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])?", container):
            raise UserError(f"--blobs {blobs}: not an Azure container name (3-63 lowercase letters, digits, '-')")
        return Hub(engine=engine, blobs=AzureBlobStore(container, home / "blob-scratch"))
    return Hub(engine=engine, blobs=FilesystemBlobStore(blobs or home / "blobs"))


def serve(hub, host: str, port: int) -> None:
    """Serve until Ctrl-C; prints the URL (with the port the system chose for ``--port 0``)."""
    import uvicorn

    from benchflow.viewer.server import bind_port

    from .app import build_app, verify_pending

    verify_pending(hub)
    sock = bind_port(port, host=host, tries=1)
    actual = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_app(hub), log_level="warning", access_log=False, lifespan="off"))
    shown = f"[{host}]" if ":" in host else host
    print(f"BenchFlow Hub on http://{shown}:{actual}/ (Ctrl-C to stop)", flush=True)
    print(f"Database {hub.engine.url.render_as_string(hide_password=True)}; blobs in {hub.blobs.root}", flush=True)
    print("Writes need a token: bench hub serve --db … --create-token USER prints one; clients read it from "
          "BENCHFLOW_HUB_TOKEN", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
