"""Plain-typed options share Typer's coercers: values and error messages stay Typer's own."""

from __future__ import annotations

from typing import Annotated

import pytest
import typer

from benchflow.cli.app import ROOT, load
from benchflow.cli.coercion import share_coercers


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def cmd(name: str = typer.Option("x"), other: str = typer.Option(None), count: int = typer.Option(1),
            small: int = typer.Option(1, min=0, max=3), tags: Annotated[list[str] | None, typer.Option()] = None,
            ratio: float = typer.Option(0.5)) -> None:
        typer.echo(f"{name}|{other}|{count}|{small}|{tags}|{ratio}")

    return app


def _run(shared: bool, args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    command = typer.main.get_command(_app())
    if shared:
        share_coercers(command)
    try:
        command.main(args=args, standalone_mode=False)
    except typer.BadParameter as exc:  # what the CLI prints as the error line
        return f"error: {exc.format_message()}"
    return capsys.readouterr().out


def test_same_values_and_errors_as_typer_alone(capsys: pytest.CaptureFixture[str]) -> None:
    for args in ([], ["--name", "a", "--other", "b", "--count", "7", "--tags", "p", "--tags", "q", "--ratio", "2"],
                 ["--count", "x"], ["--small", "9"], ["--ratio", "nan?"]):
        assert _run(True, args, capsys) == _run(False, args, capsys), args


def test_bench_run_builds_few_adapters() -> None:
    command = load(ROOT["run"], "run")
    runtime = [p._runtime_param for p in command.params if getattr(p, "_runtime_param", None) is not None]
    assert len(runtime) > 40  # bench run has many plain options: they got shared coercers up front
    assert len({id(r.adapter) for r in runtime}) <= 8
