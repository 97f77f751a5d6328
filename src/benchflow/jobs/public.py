"""``bf.run``: the Python API of ``bench run`` (the same code; keyword names as in a run config)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any



from .api import RunOutcome
from .api import run as run_spec
from .config_file import build_run_spec
from .spec import RunSpec


@dataclass
class Repeats:
    """The outcome of ``trials > 1`` or a ``matrix``: one job per repeat (and alias)."""

    outcomes: list[RunOutcome]
    exit_code: int
    """The worst of the repeats' exit codes."""


def run(*targets: str, on_event: Callable[[dict[str, Any]], None] | None = None,
        **options: Any) -> RunOutcome | Repeats:
    """Run tasks and score them; returns the outcome (job folder, summary, exit code).

    Example: ``bf.run("tasks/", agent="nop", sandbox="docker", concurrency=4, include=["hard-*"])``.
    Options are the run-config keys (``agent``, ``model``, ``sandbox``, ``concurrency``, ``jobs_dir``,
    ``include``, ``exclude``, ``limit``, ``max_retries``, ``fail_under``, ``trials``, ``matrix`` …).
    With ``trials=N`` (or a ``matrix``) every repeat is a job of its own, as with ``bench run --trials``,
    and the outcome is :class:`Repeats`.

    Raises:
        ConfigError: an unknown option or a bad value.
    """
    return dispatch(make_spec(*targets, **options), lambda spec: run_spec(spec, on_event))


def dispatch(spec: RunSpec, run_one: Callable[[RunSpec], RunOutcome]) -> RunOutcome | Repeats:
    """Run ``spec``: one job, or with ``trials``/``matrix`` one job per repeat and alias
    (``<jobs>/<alias>/trial-NN``), each run by ``run_one`` (the CLI draws each on the terminal)."""
    from .matrix import run_repeats

    if spec.trials <= 1 and not spec.matrix:
        return run_one(spec)
    outcomes: list[RunOutcome] = []

    def one(repeat: RunSpec) -> int:
        outcomes.append(run_one(repeat))
        return outcomes[-1].exit_code

    code = run_repeats(spec, one)
    return Repeats(outcomes=outcomes, exit_code=code)


def make_spec(*targets: str, config: str | None = None, **options: Any) -> RunSpec:
    """The RunSpec for ``bf.run``'s arguments: a run-config file (``config=``) with keyword options
    on top, built by the same function as ``bench run``'s.

    Raises:
        ConfigError: an unknown option or a bad value.
    """
    return build_run_spec(config, options={**options, **({"targets": list(targets)} if targets else {})},
                          source="bf.run()")
