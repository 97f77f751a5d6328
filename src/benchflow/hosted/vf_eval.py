"""One ``vf-eval`` run in the environment's venv: N examples x M rollouts, results saved as JSON lines.

The command line carries settings only: the endpoint's key stays in the variable ``--source-env-api-key-var``
names, which vf-eval reads itself (``-k NAME``), so the value is never on a command line or on disk. vf-eval
saves ``<out>/evals/<env>--<model>/<id>/results.jsonl`` (one Verifiers row per rollout, the row format of
BenchFlow's ``results.jsonl``) and ``metadata.json`` (model, versions, averages).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import HostedEnvError
from .ref import HostedRef


@dataclass
class EvalOutput:
    """What a finished vf-eval left: its rows in order, its metadata, its exit code and the log's tail."""

    rows: list[dict[str, Any]]
    metadata: dict[str, Any]
    returncode: int
    log_tail: str


def command(spec: Any, ref: HostedRef, vf_eval: str, out_dir: Path | str) -> list[str]:
    """vf-eval's argv (``vf_eval``: its path in the environment's venv) for ``spec``'s ``--source-env-*``
    settings (no secret in it)."""
    argv = [vf_eval, ref.name,
            "--env-args", json.dumps(spec.source_env_args, sort_keys=True),
            "--num-examples", str(spec.source_env_num_examples),
            "--rollouts-per-example", str(spec.source_env_rollouts_per_example),
            "--max-concurrent", str(spec.concurrency),
            "--max-tokens", str(spec.source_env_max_tokens),
            "--output-dir", str(out_dir), "--save-results", "--disable-tui"]
    if spec.model:
        argv += ["--model", spec.model]
    if spec.source_env_temperature is not None:
        argv += ["--temperature", repr(spec.source_env_temperature)]
    if spec.source_env_sampling_args:
        argv += ["--sampling-args", json.dumps(spec.source_env_sampling_args, sort_keys=True)]
    if spec.source_env_base_url:
        argv += ["--api-base-url", spec.source_env_base_url]
    if spec.source_env_api_key_var:
        argv += ["--api-key-var", spec.source_env_api_key_var]
    return argv


async def run(argv: list[str], cwd: Path, log: Path) -> EvalOutput:
    """Run vf-eval to its end (its output to ``log``); a cancelled run (Ctrl-C) kills its process group first.

    Raises:
        HostedEnvError: vf-eval could not start.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    cwd.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        try:
            process = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                           stdout=out, stderr=out, start_new_session=True)
        except OSError as exc:
            raise HostedEnvError(f"vf-eval could not start: {exc}") from None
        try:
            code = await process.wait()
        except asyncio.CancelledError:
            _kill_group(process.pid)
            await asyncio.shield(process.wait())
            raise
    rows, metadata = read_outputs(cwd)
    return EvalOutput(rows, metadata, code, _tail(log))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:  # already gone
        pass


def read_outputs(out_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows and metadata of the run saved under ``out_dir`` (none when vf-eval saved nothing)."""
    saved = sorted(out_dir.glob("**/results.jsonl"), key=lambda p: p.stat().st_mtime)
    if not saved:
        return [], {}
    rows = []
    for line in saved[-1].read_text().splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed run
            if isinstance(row, dict):
                rows.append(row)
    try:
        metadata = json.loads((saved[-1].parent / "metadata.json").read_text())
    except (OSError, ValueError):
        metadata = {}
    return rows, metadata if isinstance(metadata, dict) else {}


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())
