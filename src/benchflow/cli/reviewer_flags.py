"""The ``--reviewer-*`` flags shared by ``bench run``, ``bench eval score`` and ``bench regrade --review``.

Each command lists them as parameters with these defaults (one object per flag,
so help texts stay identical) and turns what was given into a
:class:`benchflow.review.settings.ReviewerSettings` with :func:`reviewer_changes`.
"""

from __future__ import annotations

import copy
from typing import Any, Optional

import typer

IDLE_HELP = ("Abort a reviewer prompt after this many idle seconds (default: 600). Pass 0 or 'none' to disable "
             "the idle watchdog and leave --reviewer-timeout-sec in charge.")

AGENT = typer.Option(None, "--reviewer-agent", help="Rubric reviewer harness")
MODEL = typer.Option(None, "--reviewer-model", help="Rubric reviewer model")
EFFORT = typer.Option(None, "--reviewer-reasoning-effort", help="Rubric reviewer reasoning effort")
SANDBOX = typer.Option(None, "--reviewer-sandbox", help="Rubric reviewer sandbox backend")
TIMEOUT = typer.Option(None, "--reviewer-timeout-sec", min=1, help="Reviewer execution budget in seconds")
IDLE = typer.Option(None, "--reviewer-idle-timeout", help=IDLE_HELP)
STORAGE = typer.Option(None, "--reviewer-storage-mb", min=1, help=(
    "Reviewer sandbox disk in MB (default: the evidence it holds plus 2048, at least 4096, at most the sandbox "
    "backend's limit)"))
MEMORY = typer.Option(None, "--reviewer-memory-mb", min=1, help="Reviewer sandbox memory in MB (default: 2048)")
SETUP = typer.Option(None, "--reviewer-setup-timeout", min=1, help=(
    "Seconds for the reviewer sandbox's setup, its model proxy install among it (default: the run's "
    "--sandbox-setup-timeout)"))
EVIDENCE = typer.Option(None, "--reviewer-evidence-timeout", min=1, help=(
    "Seconds to unpack, and again to check, the workspace evidence in the reviewer sandbox (default: 1 per MiB, "
    "at least 600)"))
CONCURRENCY = typer.Option(None, "--reviewer-concurrency", min=1, help="Max concurrent rubric reviewers")
IMAGE = typer.Option(None, "--reviewer-image", help="Rubric reviewer container image")
AGENT_ENV = typer.Option(None, "--reviewer-agent-env", help="Reviewer environment variable (KEY=VALUE)")
OPEN_NETWORK = typer.Option(False, "--reviewer-open-network", help="Allow unrestricted reviewer network access")


def hidden(option: Any) -> Any:
    """The same flag, left out of ``--help`` (shown by ``--help-all`` in the review panel), as ``bench run``
    lists them."""
    from .run_options import REVIEW_PANEL

    out = copy.copy(option)
    out.hidden = True
    out.rich_help_panel = REVIEW_PANEL
    return out


def idle_seconds(value: Optional[str], flag: str) -> float | None:
    """``--reviewer-idle-timeout`` as seconds (0 = off); None when not given."""
    from benchflow.errors import ConfigError
    from benchflow.util.durations import parse_duration

    if value is None:
        return None
    try:
        return parse_duration(value) or 0.0
    except ValueError as exc:
        raise ConfigError(f"{flag}: {exc}") from None


def reviewer_changes(*, agent: Optional[str], model: Optional[str], effort: Optional[str], sandbox: Optional[str],
                     timeout: Optional[int], idle: Optional[str], storage: Optional[int], memory: Optional[int],
                     setup: Optional[int], evidence: Optional[int], concurrency: Optional[int],
                     image: Optional[str], agent_env: Optional[list[str]], open_network: bool) -> dict[str, Any]:
    """The ``ReviewerSettings`` fields the flags set (only those given)."""
    from .run import _kv

    changes = {"agent": agent, "model": model, "reasoning_effort": effort, "sandbox": sandbox,
               "timeout_sec": timeout, "idle_timeout_sec": idle_seconds(idle, "--reviewer-idle-timeout"),
               "storage_mb": storage, "memory_mb": memory, "setup_timeout_sec": setup,
               "evidence_timeout_sec": evidence, "concurrency": concurrency, "image": image,
               "agent_env": _kv(agent_env, "--reviewer-agent-env") or None, "open_network": open_network or None}
    return {k: v for k, v in changes.items() if v is not None}
