"""``bf.run``: the Python API of ``bench run`` (the same code; keyword names as in a run config)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from benchflow.errors import ConfigError

from .api import RunOutcome
from .api import run as run_spec
from .config_file import spec_fields
from .spec import RunSpec


def run(*targets: str, on_event: Callable[[dict[str, Any]], None] | None = None, **options: Any) -> RunOutcome:
    """Run tasks and score them; returns the outcome (job folder, summary, exit code).

    Example: ``bf.run("tasks/", agent="nop", sandbox="docker", concurrency=4, include=["hard-*"])``.
    Options are the run-config keys (``agent``, ``model``, ``sandbox``, ``concurrency``, ``jobs_dir``,
    ``include``, ``exclude``, ``limit``, ``max_retries``, ``fail_under`` …).

    Raises:
        ConfigError: an unknown option or a bad value.
    """
    return run_spec(make_spec(*targets, **options), on_event)


def make_spec(*targets: str, **options: Any) -> RunSpec:
    """The RunSpec for ``bf.run``'s arguments.

    Raises:
        ConfigError: an unknown option or a bad value.
    """
    fields = spec_fields({**options, **({"targets": list(targets)} if targets else {})}, "bf.run()")
    try:
        return RunSpec.model_validate(fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"bf.run(): {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
