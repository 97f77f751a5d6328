"""``--verify --rerun``: measure parity again instead of trusting the recorded file.

The recorded parity_experiment.json is what the conversion wrote about itself. ``--rerun`` runs the
benchmark's ``parity_test.py --mode side-by-side`` (with this Python, in the benchmark's folder) and
scores the document it prints on stdout, which has the recorded file's shape. The fresh document is
kept beside the record as ``parity_rerun.json`` so the verdict's evidence is on disk.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError, UserError
from benchflow.util import atomic

from .evidence import Evidence, read_evidence

SCRIPT = "parity_test.py"
OUTPUT_NAME = "parity_rerun.json"
TIMEOUT_SEC = 600
"""How long one side-by-side rerun may take before it is stopped (the gate then fails, exit 1)."""


def command(bench_dir: Path) -> list[str]:
    return [sys.executable, str((bench_dir / SCRIPT).resolve()), "--mode", "side-by-side"]


def rerun_side_by_side(bench_dir: Path, *, timeout_sec: float = TIMEOUT_SEC) -> Evidence:
    """Run ``parity_test.py --mode side-by-side`` and read its stdout as parity evidence.

    Raises:
        UserError: no parity_test.py, or output that is not a parity document with evidence in it.
        BenchError: the script exited non-zero or ran past ``timeout_sec`` (exit 1: the benchmark's own
            parity test failed, nothing was measured).
    """
    script = bench_dir / SCRIPT
    if not script.is_file():
        raise UserError(f"{script}: missing; --rerun runs it with --mode side-by-side (the scaffold's "
                        "template shows what it prints), or drop --rerun to score parity_experiment.json")
    what = f"{script} --mode side-by-side"
    # A session of its own: on a timeout or Ctrl-C, the whole tree it started is stopped with it.
    proc = subprocess.Popen(command(bench_dir), cwd=bench_dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_sec)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise BenchError(f"{what}: still running after {timeout_sec:g}s; stopped, nothing measured",
                         category="parity_rerun") from None
    except BaseException:
        _stop(proc)
        raise
    if proc.returncode != 0:
        tail = (stderr.strip() or stdout.strip()).splitlines()[-1:] or ["no output"]
        raise BenchError(f"{what}: exited {proc.returncode}: {tail[0][:300]}", category="parity_rerun")
    data = _document(stdout, what)
    evidence = read_evidence(data, f"{what} (stdout)")
    if evidence.empty:
        raise UserError(f"{what}: printed no criterion pairs and no reward samples; print the "
                        "parity_experiment.json document (conversion_parity.tasks[].criteria_results[] "
                        "and/or reward_distribution_parity.samples[]) on stdout, logs on stderr")
    atomic.write_json(bench_dir / OUTPUT_NAME, data)
    return evidence


def _document(stdout: str, what: str) -> Any:
    """The JSON document on stdout: all of it, or what follows the log lines before it."""
    lines = stdout.splitlines()
    for start, line in enumerate(lines):
        if start and not line.lstrip().startswith(("{", "[")):
            continue
        try:
            return json.loads("\n".join(lines[start:]))
        except json.JSONDecodeError:
            continue
    raise UserError(f"{what}: its stdout is not a JSON document; print the parity_experiment.json "
                    "document on stdout and send log lines to stderr")


def _stop(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()
