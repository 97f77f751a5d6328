"""The conversion through BenchFlow's own agent layer, for a host without the Codex CLI.

:func:`convert_in_sandbox` writes the conversion as a one-off task (``agent_task``), runs it as a
one-trial job exactly as ``bench run TASK -a AGENT [-m MODEL]`` would (the registry agent installed
into the cached agent layer, its model calls through the job's gateway, so the provider keys and
``--model`` work as in ``bench run``), then brings the package the agent left back to the host's
``--benchmarks-dir`` with :func:`install_package`.

The trial is kept under ``jobs/adopt-<name>-<UTC time>/`` (trajectories, the agent's log, the copy
of the package in ``artifacts/<name>/``). The host's package changes only when the agent finished
without an error and the copy is whole: it is copied again, under the copy-out rules (no link that
leads out, no device; ``sandbox/copyout.py``), into a folder beside its target, then swapped in
(``util/atomic.replace_folder``), so the target is the old package or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError
from benchflow.util import atomic

from .agent_task import package_path, write_task

DEFAULT_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


class AdoptionFailed(BenchError):
    """The sandboxed conversion did not produce a whole package; the host's package is unchanged (exit 1)."""

    category = "adopt_failed"


def convert_in_sandbox(source: str, slug: str, target: Path, *, agent: str, model: str | None,
                       say: Callable[[str], None], jobs_dir: Path = Path("jobs")) -> dict[str, Any]:
    """Run the conversion of ``source`` with ``agent`` in a sandbox and install the package at ``target``.

    Returns the trial's result.json (its verifier reward says whether every file the guide asks for is there).

    Raises:
        UserError: bad input found before anything ran (the source, the agent, the model, the sandbox).
        AdoptionFailed: the agent failed or left no whole package; ``target`` is as it was.
    """
    from benchflow.jobs.api import run
    from benchflow.jobs.public import make_spec

    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    with tempfile.TemporaryDirectory(prefix=f"bench-adopt-{slug}-") as scratch:
        task = write_task(Path(scratch) / f"adopt-{slug}", source=source, slug=slug,
                          existing=target if target.is_dir() else None)
        options: dict[str, Any] = {"agent": agent, "jobs_dir": str(jobs_dir), "job_name": f"adopt-{slug}-{stamp}",
                                   "fresh": True, "max_retries": 0, "quiet": True}
        if model:
            options["model"] = model
        if _host_ca_bundle() is not None:
            options["ca_bundle"] = "host"  # the host's Codex would trust this machine's CAs too
        outcome = run(make_spec(str(task), **options), on_event=lambda event: _progress(event, say))
    trials = sorted(p.parent for p in outcome.job_dir.glob("*/result.json"))
    if len(trials) != 1:
        raise AdoptionFailed(f"the conversion left no trial in {outcome.job_dir}; {target} is unchanged")
    trial = trials[0]
    result = json.loads((trial / "result.json").read_text(encoding="utf-8"))
    if result.get("error"):
        first = str(result["error"]).strip().splitlines()[0] if str(result["error"]).strip() else ""
        raise AdoptionFailed(f"agent {agent} failed ({result.get('error_category')}: {first[:300]}); "
                             f"{target} is unchanged; what it wrote is in {trial / 'artifacts' / slug}")
    note = ((result.get("copy_out_info") or {}).get("artifacts") or {}).get(package_path(slug)) or {}
    produced = trial / "artifacts" / slug
    if "missing" in note or not produced.is_dir():
        raise AdoptionFailed(f"agent {agent} left no {package_path(slug)}/ in its sandbox; {target} is unchanged "
                             f"(its log: {trial / 'agent'})")
    copy = note.get("copy") or {}
    if copy.get("stopped") or copy.get("n_cut"):
        why = copy.get("stopped") or f"{copy['n_cut']} file(s) over the per-file cap, cut short"
        raise AdoptionFailed(f"the package in the sandbox was copied out only in part ({why}); "
                             f"{target} is unchanged; the part is in {produced}")
    report = install_package(produced, target)
    for dropped in [*copy.get("dropped", []), *report.get("dropped", [])]:
        say(f"left out of {target}: {dropped['path']} ({dropped['reason']})")
    say(f"trial record: {trial}")
    return result


def install_package(produced: Path, target: Path) -> dict[str, Any]:
    """Copy the folder ``produced`` to ``target`` whole or not at all; the copy's note (``{}``: all came).

    The copy follows no link (a link that leads out of ``produced``, a device, a FIFO is left out and
    listed in the note) and is built beside ``target``, then swapped in; a copy stopped by a cap, or
    with a file cut short by one, leaves ``target`` as it was.

    Raises:
        AdoptionFailed: the copy was not whole, or ``target``'s folder cannot be written.
    """
    from benchflow.sandbox.copyout import copy_out_tree

    try:
        staging = atomic.staging_folder(target, ".adopt")
    except OSError as exc:
        raise AdoptionFailed(f"{target.parent}: cannot be written ({exc.strerror}); the package is left in "
                             f"{produced}") from None
    try:
        with atomic.swap_in_when_done(staging, target):
            report = copy_out_tree(produced, staging)
            if report.stopped or report.n_cut:
                why = report.stopped or f"{report.n_cut} file(s) over the per-file cap, cut short"
                raise AdoptionFailed(f"copying {produced} was not whole ({why}); {target} is unchanged")
    except OSError as exc:  # the staging folder is removed already
        raise AdoptionFailed(f"{target}: cannot be replaced ({exc.strerror}); the package is left in "
                             f"{produced}") from None
    return report.note() or {}


def _host_ca_bundle() -> Path | None:
    path = Path(os.environ.get("SSL_CERT_FILE") or DEFAULT_CA_BUNDLE)
    return path if path.is_file() else None


def _progress(event: dict[str, Any], say: Callable[[str], None]) -> None:
    kind = event.get("type")
    if kind == "job_started":
        say(f"sandbox: {event.get('sandbox')} ({event.get('sandbox_reason')}); job {event.get('job_dir')}")
    elif kind == "job_finished":
        summary = event.get("summary") or {}
        say(f"conversion trial finished: {summary.get('passed', 0)}/{summary.get('total', 0)} with every file "
            "the guide asks for")
