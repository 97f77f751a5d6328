"""``bench daemon start|status|stop``: this user's opt-in warm runtime (``benchflow.daemon``)."""

from __future__ import annotations

import typer

start_cmd = typer.Typer()
status_cmd = typer.Typer()
stop_cmd = typer.Typer()


def _where(status: dict) -> str:
    return f"pid {status['pid']}, socket {status['socket']}"


@start_cmd.command(help="Start a private runtime; attach runs with BENCHFLOW_DAEMON=auto.")
def start(
    prepare: int = typer.Option(0, "--prepare", min=0, help="Prepare up to N sandboxes ahead: after a one-task Docker run ends, the same command is made ready for its next identical call (0: off)."),
    prepare_ttl: float = typer.Option(300.0, "--prepare-ttl", min=0.0, help="Seconds a prepared sandbox waits for its call before it is removed."),
) -> None:
    from benchflow.daemon import client

    status, started = client.start(prepare, prepare_ttl)
    prepared = f", prepares {status['prepare']} ahead" if status["prepare"] else ""
    if started:
        print(f"bench daemon started ({_where(status)}, sandbox {status['backend'] or 'none'}{prepared}); "
              "runs attach with BENCHFLOW_DAEMON=auto")
    else:
        print(f"bench daemon already running ({_where(status)}{prepared}); stop it to change its settings")


@status_cmd.command(help="Show whether this user's local runtime is running.\n\n"
                         "Exit 0 when it is running, 1 when it is not.")
def status() -> None:
    from benchflow.daemon import client

    answer, note = client.ask("status")
    if answer is None:
        print("bench daemon: not running" + (f" ({note})" if note else ""))
        raise typer.Exit(1)
    gateway = answer.get("gateway") or {}
    warm = f", gateway warm ({gateway['runs']} run(s) served)" if gateway.get("serving") else ", gateway down"
    print(f"bench daemon: running ({_where(answer)}), up {answer['uptime_sec']:.0f}s, "
          f"{answer['active']} active call(s), {answer['served']} served, {answer['prepared']} prepared{warm}")


@stop_cmd.command(help="Stop an idle local runtime; never interrupt an active call.\n\n"
                       "Exit 0 when it stopped (or was not running), 1 when a call is active.")
def stop() -> None:
    from benchflow.daemon import client

    answer, note = client.stop()
    if answer is None:
        print("bench daemon: not running" + (f" ({note})" if note else ""))
        return
    if not answer["stopped"]:
        print(f"bench daemon: {answer['active']} call(s) active; not stopped (stop it once they end)")
        raise typer.Exit(1)
    print("bench daemon: stopped")
