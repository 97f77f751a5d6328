"""A hosted-environment run from start to summary: hub → install → vf-eval → one trial per rollout.

The job folder is chosen, locked and recorded as for any run (``jobs/job.py``: a plain rerun resumes the
latest job of the same environment and model). vf-eval runs the whole N x M batch at once, so a job is
resumed whole: when every rollout of an earlier run with the same settings is finished, nothing runs again;
when some are not, they are set aside (``.set-aside/``) and the batch runs again; trials of other settings
are refused unless ``--restart-changed``.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

from benchflow.errors import JobFolderError
from benchflow.jobs.api import RunOutcome, exit_code, write_side_files
from benchflow.jobs.job import open_job, read_json, write_evaluation
from benchflow.jobs.layout import JobPaths, TrialPaths, unit_key
from benchflow.util import atomic

from . import HostedEnvError, install, prime_hub, vf_eval
from .record import AGENT, ENVIRONMENT, RunFacts, task_name, write_trial
from .ref import HostedRef, parse_ref

Event = dict[str, Any]
PROVIDER = "primeintellect"


def settings(spec: Any) -> dict[str, Any]:
    """The rollout settings a trial records (config.json ``hosted_env``) and resume compares."""
    return {"num_examples": spec.source_env_num_examples,
            "rollouts_per_example": spec.source_env_rollouts_per_example,
            "max_tokens": spec.source_env_max_tokens, "temperature": spec.source_env_temperature,
            "sampling_args": spec.source_env_sampling_args, "env_args": spec.source_env_args,
            "verifiers_pin": spec.source_env_verifiers_version, "base_url": spec.source_env_base_url,
            "api_key_var": spec.source_env_api_key_var}


async def run_hosted(spec: Any, emit: Callable[[Event], None]) -> RunOutcome:
    """Run ``spec``'s hosted environment and record it; the outcome as ``jobs.api.run_async``'s."""
    started = time.monotonic()
    ref = parse_ref(spec.source_env, spec.source_env_version)
    found = prime_hub.details(ref)
    recorded_spec = spec.model_copy(update={"agent": AGENT})
    identity = {"agent": AGENT, "model": spec.model, "source_env": ref.env_id}
    job, why = open_job(Path(spec.jobs_dir).expanduser(),
                        job_name=spec.job_name, fresh=spec.fresh, identity=identity, expected={},
                        restart_changed=spec.restart_changed)
    try:
        paths = job.paths
        write_evaluation(job, spec.redacted(), identity, None)  # as given: bench eval resume rebuilds it
        reused = _reusable(paths, spec, ref)
        results: dict[str, dict[str, Any] | None]
        if reused is not None:
            results, why = reused, f"{why}: every rollout finished"
            emit({"type": "job_started", "job_dir": str(paths.root), "why": why, "sandbox": ENVIRONMENT,
                  "sandbox_reason": ref.label, "agent": AGENT, "total": len(results), "reused": len(results),
                  "todo": [], "notes": []})
        else:
            results = await _run_batch(spec, ref, found, paths, why, emit)
        summary = _summary(paths, recorded_spec, results, time.monotonic() - started, ref)
        code, gate = exit_code(spec, summary, results)
        outcome = RunOutcome(job_dir=paths.root, summary=summary, exit_code=code, plan=None, gate=gate)
        write_side_files(spec, None, outcome)
        emit({"type": "job_finished", "job_dir": str(paths.root), "summary": summary, "exit_code": code})
        return outcome
    finally:
        job.release()


async def _run_batch(spec: Any, ref: HostedRef, found: dict[str, Any], paths: JobPaths, why: str,
                     emit: Callable[[Event], None]) -> dict[str, dict[str, Any] | None]:
    _set_aside(paths, spec, ref)
    rollouts = spec.source_env_rollouts_per_example
    todo = [unit_key(task_name(ref.name, example), k if rollouts > 1 else None)
            for example in range(spec.source_env_num_examples) for k in range(rollouts)]
    emit({"type": "job_started", "job_dir": str(paths.root), "why": why, "sandbox": ENVIRONMENT,
          "sandbox_reason": f"{ref.label} through verifiers' vf-eval", "agent": AGENT, "total": len(todo),
          "reused": 0, "todo": todo, "notes": []})
    work = paths.hosted_env
    log = work / "vf-eval.log"
    installed = install.ensure_installed(ref, found, spec.source_env_verifiers_version, work / "install.log")
    out_dir = work / "vf-eval"
    shutil.rmtree(out_dir, ignore_errors=True)
    argv = vf_eval.command(spec, ref, str(installed.vf_eval), out_dir)
    atomic.write_json(work / "run.json", {"source_env": ref.env_id, "requested_version": ref.version,
                                          "env_version": installed.env_version,
                                          "verifiers_version": installed.verifiers_version,
                                          "requirement": installed.requirement, "command": argv[1:]})
    output = await vf_eval.run(argv, out_dir, log)
    if not output.rows:
        raise HostedEnvError(f"{ref.label}: vf-eval saved no rollout (exit {output.returncode}): "
                             f"{output.log_tail or 'no output'} (see {log})")
    facts = RunFacts(source=_source(ref, installed, spec), settings=settings(spec),
                     model=spec.model or output.metadata.get("model"), env_name=ref.name,
                     env_version=installed.env_version)
    results: dict[str, dict[str, Any] | None] = {}
    seen: dict[Any, int] = {}
    rows = []
    for row in output.rows:
        rollout = seen.get(row.get("example_id"), 0)
        seen[row.get("example_id")] = rollout + 1
        seed = rollout if spec.source_env_rollouts_per_example > 1 else None
        task, result = write_trial(paths, facts, row, rollout, seed)
        key = unit_key(task, seed)
        results[key] = result
        rows.extend(TrialPaths(paths.root / result["trial_name"]).results_jsonl.read_text().splitlines())
        emit({"type": "trial_finished", "task": key, "result": result, "will_retry": False})
    atomic.write_text(paths.results_jsonl, "".join(line + "\n" for line in rows))
    return results


def _source(ref: HostedRef, installed: install.Installed, spec: Any) -> dict[str, Any]:
    return {"type": "hosted_env", "provider": PROVIDER, "env_id": ref.env_id, "version": installed.env_version,
            "requested_version": ref.version, "hub": prime_hub.api_base(), "runner": "vf-eval",
            "verifiers_version": installed.verifiers_version, "env_args": spec.source_env_args}


def _trials(paths: JobPaths) -> list[tuple[TrialPaths, dict[str, Any] | None, dict[str, Any] | None]]:
    return [(t, read_json(t.config), read_json(t.result)) for t in paths.trials()]


def _same_run(config: dict[str, Any] | None, spec: Any, ref: HostedRef) -> bool:
    if not config:
        return False
    recorded = {k: v for k, v in (config.get("hosted_env") or {}).items() if k not in ("example_id", "rollout")}
    source = config.get("source") or {}
    return (recorded == settings(spec) and config.get("model") == spec.model
            and source.get("env_id") == ref.env_id and ref.version in (None, source.get("version")))


def _finished(result: dict[str, Any] | None) -> bool:
    return bool(result) and ((result.get("rewards") or {}).get("reward") is not None
                             or bool(result.get("verifier_error")))


def _reusable(paths: JobPaths, spec: Any, ref: HostedRef) -> dict[str, dict[str, Any] | None] | None:
    """The earlier run's results when every one of its rollouts finished with these settings, else None."""
    trials = _trials(paths)
    summary = read_json(paths.summary) or {}
    if not trials or len(trials) != summary.get("total") or not all(
            _same_run(config, spec, ref) and _finished(result) for _, config, result in trials):
        return None
    return {key: next(r for _, _, r in trials if r and r.get("trial_name") == name)
            for key, name in (summary.get("trials") or {}).items()}


def _set_aside(paths: JobPaths, spec: Any, ref: HostedRef) -> None:
    """Move an earlier run's trials away: unfinished ones always, other settings' only with --restart-changed."""
    trials = _trials(paths)
    if not trials:
        return
    other = [t.name for t, config, _ in trials if not _same_run(config, spec, ref)]
    if other and not spec.restart_changed:
        raise JobFolderError(f"job {paths.name}: {len(other)} trial(s) ran with other settings (e.g. {other[0]}); "
                             "rerun with --restart-changed to set them aside and run again, or --fresh for a new job")
    paths.set_aside.mkdir(exist_ok=True)
    for trial, _, _ in trials:
        shutil.move(str(trial.root), str(paths.set_aside / trial.name))


def _summary(paths: JobPaths, spec: Any, results: dict[str, dict[str, Any] | None], elapsed: float,
             ref: HostedRef) -> dict[str, Any]:
    from benchflow.jobs.summary import build_summary

    first = next((r for r in results.values() if r), None)
    summary = build_summary(job_name=paths.name, spec=spec, sandbox=ENVIRONMENT, results=results,
                            elapsed_sec=elapsed, budget=None,
                            provenance={"source": (first or {}).get("source") or {"type": "hosted_env",
                                                                                 "env_id": ref.env_id}})
    atomic.write_json(paths.summary, summary)
    atomic.write_json(paths.summary_copy, summary)
    return summary
