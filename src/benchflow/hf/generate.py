"""``bench tasks generate``: task folders from agent traces (local Claude Code sessions, a file, a HF dataset).

A trace becomes a task when the agent wrote files: the task's prompt is the
session's first user prompt, the oracle writes the files the agent ended with,
and the verifier checks that each of them exists in ``/app`` with that content
(byte for byte, by SHA-256). A trace that wrote nothing has nothing to verify
and is skipped with that reason. Every text taken from a trace (prompt and file
contents) goes through the redactor first, so a key pasted into a session does
not end up in a task. Tasks are built on ``bench tasks init``'s scaffold under
a hidden name in OUTPUT and renamed into place, so they pass ``bench tasks
check``; an existing task of the same name is left alone (a rerun adds only new
traces).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import UserError
from benchflow.util import atomic
from benchflow.util.redact import redact_text

from . import traces
from .traces import Trace

TASK_FORMATS = ("task-md", "legacy")


@dataclass(frozen=True)
class GenerateOptions:
    output: Path = Path("tasks")
    projects_dir: Path | None = None
    project: str | None = None
    format: str = "auto"
    split: str = "train"
    max_rows: int = 100
    limit: int = 20
    min_steps: int = 2
    outcome: str | None = None
    author: str = "benchflow-traces"
    task_format: str = "task-md"
    dry_run: bool = False


@dataclass
class GenerateResult:
    previewed: list[Trace] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    existing: list[Path] = field(default_factory=list)
    """Tasks an earlier run already generated from these traces (left alone)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)


def generate_tasks(source: Any, options: GenerateOptions) -> GenerateResult:
    """Read traces from ``source`` ("local", a file path, or ("hf", name)) and write a task per usable trace.

    Raises:
        UserError: a bad flag value, an unreadable source, or a dataset with no rows (exit 2).
    """
    _check(options)
    if source == "local":
        found = _local_sessions(options)
    elif isinstance(source, tuple):
        found = _hf_rows(source[1], options)
    else:
        found = _file_traces(Path(source), options.format)
    result = GenerateResult()
    for trace in found:
        if len(result.previewed) >= options.limit:
            break
        if len(trace.steps) < options.min_steps:
            result.skipped.append((trace.trace_id, f"{len(trace.steps)} step(s), fewer than --min-steps "
                                                   f"{options.min_steps}"))
            continue
        if options.outcome and trace.outcome != options.outcome:
            continue
        trace.prompt = redact_text(trace.prompt)  # the preview line shows its start
        result.previewed.append(trace)
    if options.dry_run:
        return result
    for trace in result.previewed:
        if not trace.outputs:
            result.skipped.append((trace.trace_id, "the agent wrote no files in its working folder; "
                                                   "nothing to verify"))
            continue
        path = options.output / task_name(trace)
        if path.exists():
            result.existing.append(path)
        else:
            result.written.append(_write_task(trace, options, path))
    return result


def _check(options: GenerateOptions) -> None:
    if options.format not in traces.FORMATS:
        raise UserError(f"--format {options.format!r}: use one of {', '.join(traces.FORMATS)}")
    if options.outcome is not None and options.outcome not in traces.OUTCOMES:
        raise UserError(f"--outcome {options.outcome!r}: use one of {', '.join(traces.OUTCOMES)}")
    if options.task_format not in TASK_FORMATS:
        raise UserError(f"--task-format {options.task_format!r}: use task-md or legacy")
    for flag, value in (("--limit", options.limit), ("--max-rows", options.max_rows),
                        ("--min-steps", options.min_steps + 1)):
        if value < 1:
            raise UserError(f"{flag} {value}: must be a positive number")


# --- reading ------------------------------------------------------------------------


def _read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if limit is not None and len(rows) >= limit:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    rows.append(value)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror}); pass a readable JSONL trace file") from None
    return rows


def _file_traces(path: Path, fmt: str) -> list[Trace]:
    if not path.is_file():
        raise UserError(f"--from-file {path}: no such file; pass a JSONL trace file")
    records = _read_jsonl(path)
    if not records:
        raise UserError(f"--from-file {path}: no JSON records in it; pass a JSONL trace file")
    kind = fmt if fmt != "auto" else traces.detect_format(records[0])
    if kind == "claude-code":
        return [traces.from_session(path.stem, records)]
    return _rows_to_traces(records, kind, path.stem)


def _rows_to_traces(rows: list[dict[str, Any]], fmt: str, origin: str) -> list[Trace]:
    out = []
    for index, row in enumerate(rows):
        kind = fmt if fmt != "auto" else traces.detect_format(row)
        name = f"{origin}-{index}"
        if kind == "claude-code" and isinstance(row.get("events"), list):
            out.append(traces.from_session(str(row.get("session_id") or name), row["events"]))
        elif kind in ("opentraces", "claude-messages"):
            out.append(traces.from_row(name, row, kind))
    return out


def _local_sessions(options: GenerateOptions) -> list[Trace]:
    root = (options.projects_dir or Path.home() / ".claude" / "projects").expanduser()
    if not root.is_dir():
        raise UserError(f"--projects-dir {root}: no such folder; Claude Code keeps sessions in ~/.claude/projects/")
    sessions = sorted(root.glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
    out = []
    for session in sessions:
        if options.project and options.project not in session.parent.name:
            events = _read_jsonl(session, 50)
            if not any(options.project in str(e.get("cwd") or "") for e in events):
                continue
        out.append(traces.from_session(session.stem, _read_jsonl(session)))
    return out


def _hf_rows(name: str, options: GenerateOptions) -> list[Trace]:
    from . import client, sources

    source = sources.resolve(name)
    fmt = options.format if options.format != "auto" else ("auto" if source.format == "auto" else source.format)
    api = client.api()
    what = f"--from-hf {source.repo_id}"
    with client.hub_errors(what):
        files = [e.path for e in api.list_repo_tree(source.repo_id, repo_type="dataset", recursive=True)
                 if type(e).__name__ == "RepoFile" and e.path.endswith((".jsonl", ".json", ".parquet"))]
    split = options.split
    chosen = [f for f in files if re.search(rf"(^|[/_.-]){re.escape(split)}([/_.-]|$)", f)] or (
        files if len(files) == 1 and split == "train" else [])  # a lone data file is the train split
    if not chosen:
        raise UserError(f"{what}: no data file for split {split!r} (files: {', '.join(files[:5]) or 'none'}); "
                        "pass --split")
    rows: list[dict[str, Any]] = []
    from huggingface_hub import hf_hub_download

    for rel in sorted(chosen):
        if len(rows) >= options.max_rows:
            break
        with client.hub_errors(what):
            local = Path(hf_hub_download(source.repo_id, rel, repo_type="dataset", endpoint=client.endpoint(),
                                         token=client.token()))
        rows += _rows_in(local, options.max_rows - len(rows))
    return _rows_to_traces(rows, fmt, source.alias)


def _rows_in(path: Path, limit: int) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise UserError(f"{path.name}: reading parquet needs pyarrow; pip install pyarrow") from None
        return pq.read_table(path).slice(0, limit).to_pylist()
    if path.suffix == ".json":
        data = json.loads(path.read_text(errors="replace"))
        return [r for r in (data if isinstance(data, list) else [data]) if isinstance(r, dict)][:limit]
    return _read_jsonl(path, limit)


# --- writing ------------------------------------------------------------------------


def task_name(trace: Trace) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", trace.title.lower()).strip("-")[:40].strip("-") or "trace"
    return f"{slug}-{hashlib.sha256(trace.trace_id.encode()).hexdigest()[:8]}"


def _write_task(trace: Trace, options: GenerateOptions, target: Path) -> Path:
    from benchflow.tasks import render_task_md
    from benchflow.tasks.scaffold import scaffold_task

    name = target.name
    options.output.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".gen", dir=options.output))
    try:
        task = scaffold_task(name, staging, pytest=True, oracle=True).task_dir
        outputs = {rel: redact_text(content) for rel, content in sorted(trace.outputs.items())}
        prompt = trace.prompt.strip() or f"Recreate the files {', '.join(outputs)} in /app."
        frontmatter = {
            "schema_version": "1.3",
            "metadata": {"author_name": options.author, "difficulty": "medium", "category": "generated-from-trace",
                         "tags": ["generated", trace.format]},
            "agent": {"timeout_sec": 600},
            "verifier": {"timeout_sec": 120},
            "sandbox": {"cpus": 1, "memory_mb": 2048},
        }
        listing = "\n".join(f"- `/app/{rel}`" for rel in outputs)
        body = (f"# {name}\n\n## prompt\n\n{prompt}\n\nWork in /app. When you are done these files must be there:"
                f"\n\n{listing}\n")
        atomic.write_text(task / "task.md", render_task_md(frontmatter, body))
        atomic.write_text(task / "verifier" / "test_outputs.py", _test_outputs(outputs))
        atomic.write_text(task / "oracle" / "solve.sh", _solve_sh(outputs)).chmod(0o755)
        atomic.write_json(task / "generated-from.json", {
            "kind": "benchflow.generated-task", "trace_id": trace.trace_id, "format": trace.format,
            "outcome": trace.outcome, "steps": len(trace.steps), "files": sorted(outputs)})
        if options.task_format == "legacy":
            from benchflow.tasks.export import export_task

            export_task(task, staging / f"{name}.legacy")
            task = staging / f"{name}.legacy"
        task.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _test_outputs(outputs: dict[str, str]) -> str:
    expected = {rel: hashlib.sha256(content.encode()).hexdigest() for rel, content in outputs.items()}
    return ('"""Checks generated from an agent trace: each file the agent ended with, byte for byte."""\n\n'
            "import hashlib\nfrom pathlib import Path\n\nimport pytest\n\nWORKDIR = Path(\"/app\")\n"
            f"EXPECTED = {json.dumps(expected, indent=4)}\n\n\n"
            "@pytest.mark.parametrize(\"rel\", sorted(EXPECTED))\n"
            "def test_file_matches(rel: str) -> None:\n"
            "    path = WORKDIR / rel\n"
            "    assert path.is_file(), f\"expected /app/{rel}\"\n"
            "    assert hashlib.sha256(path.read_bytes()).hexdigest() == EXPECTED[rel], f\"/app/{rel} differs\"\n")


def _solve_sh(outputs: dict[str, str]) -> str:
    lines = ["#!/usr/bin/env bash", "# Reference solution generated from the agent trace: write the files it ended with.",
             "set -euo pipefail", "mkdir -p /app", "cd /app"]
    for rel, content in outputs.items():
        encoded = base64.b64encode(content.encode()).decode()
        quoted = "'" + rel.replace("'", "'\\''") + "'"
        lines += [f"mkdir -p \"$(dirname {quoted})\"", f"printf '%s' '{encoded}' | base64 -d > {quoted}"]
    return "\n".join(lines) + "\n"
