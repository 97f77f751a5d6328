"""The ``bench`` process ends with its command's exit code, its output flushed and every atexit
hook registered while the command ran still run (only the interpreter's teardown is skipped)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import atexit, sys
from benchflow.cli import main as cli

command, marker = cli.run, sys.argv[1]

def run(args):
    atexit.register(lambda: open(marker, "w").write("hook ran"))
    print("x" * 100_000)  # more than a pipe buffer: must all arrive
    return command(args)

cli.run = run
sys.argv = ["bench", *sys.argv[2:]]
cli.main()
"""


def _bench(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    marker = tmp_path / "marker"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(marker), *args], capture_output=True, text=True,
                          timeout=120)
    return done, marker


def test_a_user_error_exits_2_with_its_line_and_hooks_run(tmp_path: Path) -> None:
    done, marker = _bench(tmp_path, "run", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert "no such folder" in done.stderr
    assert done.stdout == "x" * 100_000 + "\n"
    assert marker.read_text() == "hook ran"


def test_a_successful_command_exits_0(tmp_path: Path) -> None:
    done, marker = _bench(tmp_path, "tasks", "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout
    assert marker.read_text() == "hook ran"
