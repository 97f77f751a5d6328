"""What a pushed run must satisfy, and the leaderboard figures the hub keeps of it.

A run arrives as the zip ``bench bundle`` writes (redacted, ``<job>/<trial>/…``).
The hub trusts none of it: every trial's ``result.json`` and ``config.json`` is
validated against the JSON Schema shipped in :mod:`benchflow.records` (the
first error is the refusal), and against the dataset version it names each
trial's task must be one of the version's tasks with the digest the version
pins. The figures are then computed by the readers ``bench eval metrics``
uses: the records are unpacked (only the small JSON records, never traces)
and read with :func:`benchflow.results.job.load_job` (one attempt per task),
and each agent+model gets :func:`benchflow.results.metrics.solve_rates`.
"""

from __future__ import annotations

from benchflow.errors import UserError
import json
import math
import tempfile
import zipfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

MAX_RECORD_BYTES = 16 << 20
RECORD_NAMES = {"result.json", "config.json", "timing.json", "summary.json", "evaluation.json"}


class Refused(UserError):
    """An upload the hub will not keep; the message says why (schema path, task, digest)."""


@dataclass
class RunFigures:
    job_name: str
    n_trials: int
    entries: list[dict[str, Any]] = field(default_factory=list)
    dataset: str | None = None
    """The dataset version the job recorded (``org/name@version``), if any."""


@cache
def _validator(name: str):
    from jsonschema import Draft202012Validator

    from benchflow.records.schemas import schema_path

    return Draft202012Validator(json.loads(schema_path(name).read_text()))


def schema_error(name: str, document: Any) -> str | None:
    """The first way ``document`` breaks the shipped ``<name>.schema.json``, as ``path: message``; None if valid."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name).iter_errors(document))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"{where}: {error.message}"


def _records(archive: zipfile.ZipFile) -> dict[str, dict[str, bytes]]:
    """``{trial folder: {record name: bytes}}`` plus ``""`` for job-level records, of the bundled job."""
    found: dict[str, dict[str, bytes]] = {}
    for info in archive.infolist():
        parts = PurePosixPath(info.filename).parts
        if info.is_dir() or len(parts) not in (2, 3) or parts[-1] not in RECORD_NAMES:
            continue
        if any(p in ("..", "") or p.startswith(".") for p in parts):
            continue
        if info.file_size > MAX_RECORD_BYTES:
            raise Refused(f"{info.filename}: larger than {MAX_RECORD_BYTES >> 20} MiB")
        folder = parts[1] if len(parts) == 3 else ""
        found.setdefault(folder, {})[parts[-1]] = archive.read(info)
    return found


def _json(name: str, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise Refused(f"{name}: not JSON ({exc})") from exc


def check_bundle(path: Path, dataset_tasks: dict[str, str] | None, dataset: str | None) -> RunFigures:
    """Validate the run bundle at ``path`` and compute its leaderboard entries.

    ``dataset_tasks`` is ``{task name: digest}`` of the version the run is linked to (None: not linked).

    Raises:
        Refused: not a bundle, a record breaking its schema, or a task/digest the dataset does not pin.
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise Refused(f"not a run bundle zip ({exc})") from exc
    with archive:
        prefixes = {PurePosixPath(n).parts[0] for n in archive.namelist() if n}
        if len(prefixes) != 1:
            raise Refused("a run bundle holds one job folder (as bench bundle writes it)")
        job_name = prefixes.pop()
        records = _records(archive)
    trials = {folder: files for folder, files in records.items() if folder and "result.json" in files}
    if not trials:
        raise Refused(f"{job_name}: holds no finished trial (no <trial>/result.json)")
    recorded: set[str] = set()
    for folder, files in sorted(trials.items()):
        for record in ("result", "config"):
            raw = files.get(f"{record}.json")
            if raw is None:
                continue
            where = f"{folder}/{record}.json"
            problem = schema_error(record, _json(where, raw))
            if problem:
                raise Refused(f"{where} does not match the {record} schema: {problem}")
        result = _json(folder, files["result.json"])
        config = _json(folder, files["config.json"]) if "config.json" in files else {}
        for doc in (config, result):
            if doc.get("dataset_name") and doc.get("dataset_version"):
                recorded.add(f"{doc['dataset_name']}@{doc['dataset_version']}")
        if dataset_tasks is not None:
            _check_task(folder, result, config, dataset_tasks, dataset)
    figures = _figures(job_name, records)
    figures.dataset = recorded.pop() if len(recorded) == 1 else None
    return figures


def _check_task(folder: str, result: dict, config: dict, tasks: dict[str, str], dataset: str | None) -> None:
    task = result.get("task_name") or config.get("task_name")
    if task not in tasks:
        raise Refused(f"{folder}: task {task!r} is not a task of {dataset}")
    digest = result.get("task_digest") or config.get("task_digest")
    if digest is None:
        raise Refused(f"{folder}: records no task_digest, so it cannot be matched to {dataset}")
    if digest != tasks[task]:
        raise Refused(f"{folder}: task {task} ran with digest {digest}, but {dataset} pins {tasks[task]}")


def _control(members: list[Any], is_success: Any) -> dict[str, Any]:
    """An entry of control runs (all oracle, or all empty): which control, and the tasks that went
    against it as JSON (the oracle did not solve them; the empty agent did)."""
    kinds = {t.control for t in members}
    if len(kinds) != 1 or None in kinds:
        return {"control": None, "control_deviations": None}
    kind = kinds.pop()
    against = sorted({t.task_name for t in members if is_success(t.reward, None) != (kind == "oracle")})
    return {"control": kind, "control_deviations": json.dumps(against)}


def _figures(job_name: str, records: dict[str, dict[str, bytes]]) -> RunFigures:
    from benchflow.results.job import load_job
    from benchflow.results.metrics import is_success, solve_rates

    with tempfile.TemporaryDirectory(prefix="hub-run-") as tmp:
        job = Path(tmp) / "job"
        for folder, files in records.items():
            target = job / folder if folder else job
            target.mkdir(parents=True, exist_ok=True)
            for name, raw in files.items():
                (target / name).write_bytes(raw)
        doc = load_job(job, attempts="best", include_controls=True)
    groups: dict[tuple[str | None, str | None], list[Any]] = {}
    for trial in doc.trials:
        if trial.finished:
            groups.setdefault((trial.agent, trial.model), []).append(trial)
    entries = []
    for (agent, model), members in sorted(groups.items(), key=lambda i: (str(i[0][0]), str(i[0][1]))):
        rates = solve_rates(members)
        interval = rates.get("interval") or {}
        tokens = [t.total_tokens for t in members if t.total_tokens is not None]
        costs = [t.cost_usd for t in members if t.cost_usd is not None]
        entries.append({"agent": agent, "model": model, "tasks": rates["tasks"], "trials": rates["trials"],
                        "solve_rate": rates["solve_rate"], "score": rates["score"],
                        "interval_low": interval.get("low"), "interval_high": interval.get("high"),
                        "total_tokens": sum(tokens) if tokens else None,
                        "cost_usd": math.fsum(costs) if costs else None, **_control(members, is_success)})
    return RunFigures(job_name=job_name, n_trials=len(doc.trials), entries=entries)
