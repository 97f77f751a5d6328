"""Entry point of ``bench`` / ``benchflow``.

Owns what happens around a command: the fast ``--version`` path, one-line
user errors (exit 2), Ctrl-C (exit 130), and the crash log for anything
unexpected (exit 1).
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        from benchflow import __version__

        print(f"benchflow {__version__}")
        raise SystemExit(0)
    if argv is None:  # the ``bench`` process itself (never a caller's process that passes argv)
        atexit.register(_leave_without_teardown)  # registered first: runs after every other atexit hook
        from benchflow.util import startup_gc

        startup_gc.starting()
    code = run(args)
    _exit_code.append(code)
    raise SystemExit(code)


_exit_code: list[int] = []


def _leave_without_teardown() -> None:
    """End the process with the command's exit code once it is done, skipping the interpreter's
    teardown.

    Freeing every module and object one by one (pydantic's schemas, the Docker SDK, ...) costs
    0.1-0.3 s of wall time after the last line is printed. By the time this runs, Python has
    joined the non-daemon threads and run every other atexit hook (logging, temporary folders);
    only that teardown is skipped. A process leaving for another reason (no code recorded) exits
    as usual.
    """
    if not _exit_code:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(_exit_code[-1])


def run(args: list[str]) -> int:
    """Run the CLI on ``args`` and return the exit code."""
    from benchflow.errors import BenchError
    from benchflow.util.pydantic_plugins import skip_scan_without_plugins

    from .app import build_app

    skip_scan_without_plugins()  # before the first model: Typer's coercers are pydantic's too
    command = build_app()
    try:
        code = command.main(args=args, prog_name="bench", standalone_mode=False)
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except BenchError as exc:
        print_error(str(exc))
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # noqa: BLE001 - the last line of defence
        import typer

        if isinstance(exc, typer.Abort):
            print("Aborted.", file=sys.stderr)
            return 130
        if isinstance(exc, typer.Exit):
            return exc.exit_code
        if isinstance(exc, typer.TyperException) and hasattr(exc, "show"):
            exc.show()
            return getattr(exc, "exit_code", 2)
        return crash(exc)
    return code if isinstance(code, int) else 0


def print_error(message: str) -> None:
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[bold red]error:[/] {escape(message)}")


def crash(exc: BaseException) -> int:
    """Print the traceback, keep a redacted copy in a crash log, return 1."""
    import traceback

    from benchflow.util.redact import redact_text

    text = "".join(traceback.format_exception(exc))
    sys.stderr.write(text)
    from benchflow.util.cache_dir import cache_root

    log_dir = Path(os.environ.get("BENCHFLOW_LOG_DIR") or cache_root() / "logs")
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = log_dir / f"bench-{stamp}-{os.getpid()}.log"
        path.write_text(redact_text(text))
        print(f"bench crashed; the log is at {path}", file=sys.stderr)
    except OSError:
        print("bench crashed", file=sys.stderr)
    return 1
