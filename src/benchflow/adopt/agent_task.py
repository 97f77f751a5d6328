"""The conversion as a one-off BenchFlow task, for a host without the Codex CLI.

The task folder this writes is what ``bench run`` would take: ``environment/`` builds the sandbox
image (``$BENCHFLOW_ADOPT_IMAGE``, default ``debian:bookworm-slim``) with the source copied to
``/app/source`` and the package to ``/app/benchmarks/<name>/`` (the host's existing package, else a
fresh scaffold); ``task.md``'s prompt is the conversion prompt and its one artifact is the package
folder, copied out through the sandbox's safe copy-out when the agent stops. The verifier scores 1
when the package holds every file the guide's "Done when" lists, ``parity_experiment.json`` measured
rather than the template: a record of how far the agent got, not the parity gate (that runs on the host).

A local source is copied as it is (symlinks stay links; a link leading out of it leads nowhere in the
image); any other source is cloned on the host (``git clone --depth 1``): the sandbox has no network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import yaml

from benchflow.errors import UserError
from benchflow.tasks.document import escape_headings
from benchflow.util import atomic

from .convert import SANDBOX_WORKDIR, sandbox_prompt
from .package import render_files

IMAGE_ENV = "BENCHFLOW_ADOPT_IMAGE"
DEFAULT_IMAGE = "debian:bookworm-slim"
AGENT_TIMEOUT_SEC = 3600.0
CLONE_TIMEOUT_SEC = 600
DONE_FILES = ("benchflow.py", "main.py", "parity_test.py", "parity_experiment.json", "benchmark.yaml", "README.md")
"""What the guide's "Done when" asks the package to hold (the verifier's check)."""


def image(env: Mapping[str, str] | None = None) -> str:
    """The sandbox's base image: ``$BENCHFLOW_ADOPT_IMAGE``, else :data:`DEFAULT_IMAGE`."""
    return (env if env is not None else os.environ).get(IMAGE_ENV, "").strip() or DEFAULT_IMAGE


def package_path(slug: str) -> str:
    """The package's folder in the sandbox."""
    return f"{SANDBOX_WORKDIR}/benchmarks/{slug}"


def write_task(root: Path, *, source: str, slug: str, existing: Path | None,
               env: Mapping[str, str] | None = None) -> Path:
    """Write the task folder at ``root`` (which must not exist) and return it.

    ``existing``: the host's package to continue from, else the scaffold is rendered.

    Raises:
        UserError: the source is neither a local path nor something ``git clone`` can fetch.
    """
    context = root / "environment"
    context.mkdir(parents=True)
    _put_source(source, context / "source")
    package = context / "benchmarks" / slug
    if existing is not None:
        shutil.copytree(existing, package, symlinks=True)
    else:
        for rel, text in render_files(slug).items():
            atomic.write_text(package / rel, text)
    atomic.write_text(context / "Dockerfile", "\n".join([
        f"FROM {image(env)}", f"WORKDIR {SANDBOX_WORKDIR}", "RUN mkdir -p /logs/verifier /logs/agent /logs/artifacts",
        f"COPY source/ {SANDBOX_WORKDIR}/source/", f"COPY benchmarks/ {SANDBOX_WORKDIR}/benchmarks/", ""]))
    front = {"schema_version": "1.3",
             "task": {"name": f"benchflow/adopt-{slug}", "description": f"Convert {source} into benchmarks/{slug}/"},
             "agent": {"timeout_sec": AGENT_TIMEOUT_SEC},
             "verifier": {"type": "test-script", "timeout_sec": 60.0},
             "sandbox": {"network_mode": "no-network"},
             "artifacts": [{"source": package_path(slug), "destination": slug}]}
    prompt = escape_headings(sandbox_prompt(source, slug))
    atomic.write_text(root / "task.md", f"---\n{yaml.safe_dump(front, sort_keys=False)}---\n\n## prompt\n\n{prompt}\n")
    atomic.write_text(root / "verifier" / "test.sh", _verifier(slug), mode=0o755)
    return root


def _put_source(source: str, dest: Path) -> None:
    local = Path(source).expanduser()
    if local.is_dir():
        shutil.copytree(local, dest, symlinks=True)
        return
    if local.is_file():
        dest.mkdir()
        shutil.copy2(local, dest / local.name)
        return
    if "://" not in source and not source.startswith("git@"):
        raise UserError(f"{source}: no such file or folder, and not a repository URL; give a local path or a "
                        "URL git can clone")
    try:
        done = subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--", source, str(dest)],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=CLONE_TIMEOUT_SEC)
    except FileNotFoundError:
        raise UserError(f"{source}: git is not installed here to clone it; install git or give a local "
                        "checkout") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"{source}: git clone took longer than {CLONE_TIMEOUT_SEC}s; give a local checkout "
                        "instead") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"{source}: git clone failed ({why}); check the URL or give a local checkout")


def _verifier(slug: str) -> str:
    files = " ".join(DONE_FILES)
    return f"""#!/bin/sh
# Reward 1 when {package_path(slug)}/ holds every file the conversion guide asks for, with a measured
# parity_experiment.json (not the scaffold's template); else 0 and the list of what is missing.
p={package_path(slug)}
missing=""
for f in {files}; do
    [ -f "$p/$f" ] || missing="$missing $f"
done
if grep -q '"status": *"template"' "$p/parity_experiment.json" 2>/dev/null; then
    missing="$missing parity_experiment.json(still-the-template)"
fi
mkdir -p /logs/verifier
if [ -z "$missing" ]; then
    echo 1 > /logs/verifier/reward.txt
    echo "the package holds every file the guide asks for"
else
    echo 0 > /logs/verifier/reward.txt
    echo "missing:$missing"
fi
exit 0
"""
