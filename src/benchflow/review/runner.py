"""``bench review PATH``: grade finished rollouts against a rubric with reviewer rollouts.

Each reviewed rollout becomes a wrapper task (:mod:`.wrapper`) over a copy of its
evidence (:mod:`.evidence`); the wrapper tasks run as one ordinary job in the
review folder (``--out-dir``), through the same engine as ``bench run``. Each
reviewer's folder then gets ``review_report.json`` (:mod:`.report`) and the
review folder ``review-summary.json``. The reviewed rollouts are only read.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError, JobFolderError
from benchflow.jobs.layout import JobPaths, TrialPaths
from benchflow.records import TrialResult, Unreadable, read_record
from benchflow.util import atomic

from .evidence import collect_evidence
from .prompts import load_template, render
from .report import REPORT_NAME, build_report, judge
from .rubric import Rubric, default_rubric, load_rubric
from .settings import DEFAULT_IMAGE, ReviewerSettings
from .wrapper import WrapperSettings, wrapper_name, write_wrapper

SUMMARY_NAME = "review-summary.json"
Event = dict[str, Any]


@dataclass
class Target:
    """One finished rollout to review."""

    trial: TrialPaths
    result: TrialResult

    @property
    def reward(self) -> float | None:
        return self.result.reward if self.result.rewards is not None else None

    def record(self) -> dict[str, Any]:
        return {"trial": str(self.trial.root), "trial_name": self.trial.name, "job": self.trial.root.parent.name,
                "task_name": self.result.task_name, "reward": self.reward, "task_digest": self.result.task_digest,
                "agent": self.result.agent, "model": self.result.model}


@dataclass
class Prepared:
    target: Target
    wrapper: str
    rubric: Rubric
    evidence: dict[str, Any]


def select_targets(path: Path, *, passing: bool = False, failing: bool = False) -> list[Target]:
    """The finished rollouts at ``path`` (one rollout folder, or a job folder), filtered.

    Raises:
        JobFolderError: not a rollout or job folder.
        ConfigError: both ``--passing`` and ``--failing``.
    """
    from benchflow.results.reader import is_job_dir, is_trial_dir

    if passing and failing:
        raise ConfigError("--passing and --failing exclude each other; give one, or neither to review all")
    path = path.expanduser()
    if not path.is_dir():
        raise JobFolderError(f"{path}: no such folder; give a finished rollout folder or a job folder")
    if is_trial_dir(path):
        trials = [TrialPaths(path)]
    elif is_job_dir(path):
        trials = JobPaths(path).trials()
    else:
        raise JobFolderError(f"{path}: not a rollout folder (no result.json) nor a job folder; give one of them")
    out = []
    for trial in trials:
        try:
            result = read_record(TrialResult, trial.result, name=trial.name)
        except Unreadable:
            continue
        if result is None:
            continue
        target = Target(trial, result)
        passed = target.reward is not None and abs(target.reward - 1.0) <= 1e-9
        if (passing and not passed) or (failing and (target.reward is None or passed)):
            continue
        out.append(target)
    return out


def task_index(tasks_root: Path | None) -> dict[str, Path] | None:
    """Task name -> folder under the trusted ``--tasks-root``; None without one."""
    from benchflow.tasks import discover_tasks

    if tasks_root is None:
        return None
    if not tasks_root.is_dir():
        raise ConfigError(f"--tasks-root {tasks_root}: no such folder; give the trusted folder of the reviewed tasks")
    return {p.name: p for p in discover_tasks(tasks_root)}


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _evidence_lines(evidence: Any) -> str:
    lines = ["- /evidence/trial: the rollout's records (result.json, config.json, trajectory/, agent/, verifier/)"]
    lines.append("- /evidence/workspace: the final workspace" if evidence.workspace_files else
                 "- /evidence/workspace: empty (the workspace was not frozen)")
    lines.append("- /evidence/task: the task definition (instruction, tests, oracle)" if evidence.task["included"]
                 else f"- /evidence/task: empty ({evidence.task['reason']})")
    return "\n".join(lines)


def prepare(targets: list[Target], staging: Path, settings: ReviewerSettings, *, rubric_path: Path | None,
            prompt_path: Path | None, task_index: dict[str, Path] | None) -> list[Prepared]:
    """Write one wrapper task per target under ``staging``; ``task_index`` (task name -> trusted folder)
    is None when no trusted tasks were given."""
    template = load_template(prompt_path)
    chosen = load_rubric(rubric_path) if rubric_path is not None else None
    index = task_index or {}
    out = []
    for target in targets:
        name = wrapper_name(target.trial.name)
        scratch = staging / ".evidence" / name
        evidence = collect_evidence(target.trial, scratch, task_dir=index.get(target.result.task_name),
                                    tasks_root_given=task_index is not None,
                                    recorded_digest=target.result.task_digest)
        rubric = chosen or _task_rubric(evidence.task_dir, target.result.task_name) or default_rubric()
        instruction = render(template, rubric, evidence=_evidence_lines(evidence),
                             task_name=target.result.task_name, reward=target.reward)
        size = _size(scratch)
        write_wrapper(staging / name, scratch, instruction, WrapperSettings(
            image=settings.image or DEFAULT_IMAGE, timeout_sec=settings.timeout_sec,
            open_network=settings.open_network, memory_mb=settings.memory_mb, storage_mb=settings.storage_for(size),
            setup_timeout_sec=settings.build_timeout_for(size)))
        out.append(Prepared(target, name, rubric, evidence.record()))
    shutil.rmtree(staging / ".evidence", ignore_errors=True)
    return out


def _task_rubric(task_copy: Path | None, task_name: str) -> Rubric | None:
    """The admitted task copy's ``verifier/rubric.json`` (its digest was verified), if any."""
    if task_copy is None or not (task_copy / "verifier" / "rubric.json").is_file():
        return None
    return load_rubric(task_copy / "verifier" / "rubric.json", source=f"task:{task_name}")


def check_network(settings: ReviewerSettings) -> str:
    """The backend name; refuses a backend that cannot keep the reviewer off the network (fail closed).

    Raises:
        ConfigError: the backend cannot enforce ``no-network`` and ``--allow-open-network`` was not given.
    """
    from benchflow.sandbox import default_backend_name, get_backend

    name = settings.sandbox or default_backend_name()
    if not settings.open_network and get_backend(name).capabilities.network_for("no-network") != "no-network":
        raise ConfigError(f"sandbox {name} cannot run a reviewer without network; pass --allow-open-network to "
                          "review there anyway (the report records it), or use a sandbox that enforces no-network")
    return name


async def run_reviewers(prepared: list[Prepared], staging: Path, settings: ReviewerSettings, out_dir: Path,
                        on_event: Callable[[Event], None] | None = None) -> dict[str, TrialPaths]:
    """Run the wrapper tasks as one job in ``out_dir``; wrapper name -> its newest finished reviewer folder."""
    from benchflow.jobs.api import run_async
    from benchflow.jobs.public import make_spec

    options: dict[str, Any] = {"agent": settings.agent, "model": settings.effective_model,
                               "reasoning_effort": settings.reasoning_effort, "sandbox": settings.sandbox,
                               "concurrency": settings.concurrency, "jobs_dir": str(out_dir.parent),
                               "job_name": out_dir.name, "agent_env": dict(settings.agent_env),
                               "sandbox_user": "agent", "include": [p.wrapper for p in prepared]}
    if settings.idle_timeout_sec is not None:
        options["agent_idle_timeout_sec"] = settings.idle_timeout_sec
    spec = make_spec(str(staging), **{k: v for k, v in options.items() if v is not None})
    try:
        await run_async(spec, on_event)
    finally:
        drop_wrapper_images({p.wrapper for p in prepared}, settings.sandbox)
    found: dict[str, TrialPaths] = {}
    for trial in JobPaths(out_dir).trials():
        wrapper = trial.name.rsplit("__", 1)[0]
        if trial.result.is_file():
            older = found.get(wrapper)
            if older is None or trial.result.stat().st_mtime >= older.result.stat().st_mtime:
                found[wrapper] = trial
    return found


def drop_wrapper_images(wrappers: set[str], sandbox: str | None) -> list[str]:
    """Remove the images built for these wrapper tasks (and their agent layers): the evidence is baked
    into them, so they are neither kept on the engine nor reused. Returns the refs removed."""
    from benchflow.sandbox import default_backend_name, get_backend

    store = get_backend(sandbox or default_backend_name()).cache
    if store is None or "images" not in store.kinds:
        return []
    removed = []
    try:
        entries = store.entries(("images",))
    except Exception:  # an engine that does not answer: nothing to remove from it now
        return []
    for entry in entries:
        repo = entry.ref.rsplit(":", 1)[0].rsplit("/", 1)[-1]
        if any(repo == name or repo.startswith(name + "-") for name in wrappers):
            try:
                store.remove(entry)
                removed.append(entry.ref)
            except Exception:  # noqa: BLE001 - in use by something else: it stays, as bench cache would leave it
                continue
    return removed


def report_for(item: Prepared, reviewer: TrialPaths | None, settings: ReviewerSettings) -> dict[str, Any]:
    outcome = judge(reviewer, item.rubric, item.target.reward)
    report = build_report(reviewed=item.target.record(), rubric=item.rubric, reviewer=settings.record(),
                          evidence=item.evidence, outcome=outcome, reviewer_trial=reviewer.root if reviewer else None)
    if reviewer is not None:
        atomic.write_json(reviewer.review_report, report)
    return report


async def review_targets(targets: list[Target], settings: ReviewerSettings, *, out_dir: Path,
                         tasks: dict[str, Path] | None, rubric_path: Path | None = None,
                         prompt_path: Path | None = None,
                         on_event: Callable[[Event], None] | None = None) -> list[dict[str, Any]]:
    """Review ``targets`` as one reviewer job in ``out_dir``; one report each (written in its reviewer folder)."""
    settings.sandbox = check_network(settings)
    staging = Path(tempfile.mkdtemp(prefix="benchflow-review-"))
    try:
        prepared = await asyncio.to_thread(prepare, targets, staging, settings, rubric_path=rubric_path,
                                           prompt_path=prompt_path, task_index=tasks)
        reviewers = await run_reviewers(prepared, staging, settings, out_dir, on_event)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [report_for(item, reviewers.get(item.wrapper), settings) for item in prepared]


async def review_async(path: Path, settings: ReviewerSettings, *, rubric_path: Path | None = None,
                       prompt_path: Path | None = None, tasks_root: Path | None = None,
                       out_dir: Path | None = None, passing: bool = False, failing: bool = False,
                       on_event: Callable[[Event], None] | None = None) -> dict[str, Any]:
    targets = select_targets(path, passing=passing, failing=failing)
    if not targets:
        raise JobFolderError(f"{path}: no finished rollout to review" + (" matches the filter" if passing or failing
                                                                         else ""))
    out_dir = (out_dir or Path("jobs") / f"review-{dt.datetime.now():%Y-%m-%d__%H-%M-%S}").expanduser().resolve()
    reports = await review_targets(targets, settings, out_dir=out_dir, tasks=task_index(tasks_root),
                                   rubric_path=rubric_path, prompt_path=prompt_path, on_event=on_event)
    return write_summary(path, out_dir, reports)


def write_summary(path: Path, out_dir: Path, reports: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [{"trial": r["reviewed"]["trial_name"], "task_name": r["reviewed"]["task_name"],
             "reward": r["reviewed"]["reward"], "status": r["status"], "decision": r.get("decision"),
             "raw_quality": r.get("raw_quality"), "gated_quality": r.get("gated_quality"),
             "error": (r.get("error") or {}).get("category"),
             "report": str(Path(r["reviewer"]["trial"]) / REPORT_NAME) if r["reviewer"]["trial"] else None}
            for r in reports]
    status = Counter(r["status"] for r in rows)
    summary = {"schema_version": 1, "kind": "benchflow.review-summary", "path": str(path), "out_dir": str(out_dir),
               "counts": {"reviewed": len(rows), "completed": status["completed"],
                          "reviewer_error": status["reviewer_error"],
                          **{d: sum(r["decision"] == d for r in rows) for d in
                             ("publishable", "presentable_with_revisions", "not_publishable")}},
               "reviews": rows, "exit_code": 1 if status["reviewer_error"] else 0}
    atomic.write_json(out_dir / SUMMARY_NAME, summary)
    return summary


def review(path: Path, settings: ReviewerSettings, **options: Any) -> dict[str, Any]:
    """Review the rollout or job at ``path``; returns the ``review-summary.json`` document.

    Raises:
        JobFolderError: ``path`` holds no finished rollout (after ``--passing``/``--failing``).
        ConfigError: a bad rubric, prompt template, ``--tasks-root``, or a backend without no-network.
    """
    return asyncio.run(review_async(path, settings, **options))
