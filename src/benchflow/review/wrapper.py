"""The throwaway task a reviewer runs: the evidence baked read-only into its image.

A review is an ordinary rollout of this task, run by the ordinary engine:
``environment/Dockerfile`` copies the evidence to ``/evidence`` owned by root and
read-only for everyone else (the reviewer runs as the unprivileged sandbox user),
the workspace is ``/review``, and the network is ``no-network`` unless the user
allowed an open one. Its verifier only records whether an answer file was written
(reward 1 or 0); the review itself is judged on the host from the answer.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from benchflow.tasks.document import escape_headings
from benchflow.tasks.task_md_writer import render_task_md

from .prompts import ANSWER_PATH

WORKDIR = "/review"
VERIFIER_TIMEOUT_SEC = 60


@dataclass(frozen=True)
class WrapperSettings:
    image: str
    timeout_sec: float
    open_network: bool
    memory_mb: int = 2048
    storage_mb: int | None = None
    setup_timeout_sec: float | None = None


def wrapper_name(trial_name: str) -> str:
    """``review-<trial>`` as a task folder name (``__`` would read as a trial suffix)."""
    return "review-" + re.sub(r"[^A-Za-z0-9._-]", "-", trial_name.replace("__", "--"))


def _dockerfile(image: str) -> str:
    return (f"FROM {image}\nUSER root\nCOPY evidence/ /evidence/\n"
            "RUN chown -R 0:0 /evidence && chmod -R u=rwX,go=rX /evidence && mkdir -p " + WORKDIR + "\n"
            f"WORKDIR {WORKDIR}\n")


def write_wrapper(dest: Path, evidence_dir: Path, instruction: str, settings: WrapperSettings) -> Path:
    """Write the wrapper task folder ``dest`` (moving ``evidence_dir`` into its build context)."""
    env_dir = dest / "environment"
    env_dir.mkdir(parents=True, exist_ok=True)
    shutil.move(str(evidence_dir), env_dir / "evidence")
    (env_dir / "Dockerfile").write_text(_dockerfile(settings.image))
    sandbox: dict = {"network_mode": "public" if settings.open_network else "no-network", "workdir": WORKDIR,
                     "memory_mb": settings.memory_mb}
    if settings.storage_mb is not None:
        sandbox["storage_mb"] = settings.storage_mb
    if settings.setup_timeout_sec is not None:
        sandbox["build_timeout_sec"] = settings.setup_timeout_sec
    frontmatter = {"schema_version": "1.3", "agent": {"timeout_sec": settings.timeout_sec},
                   "verifier": {"timeout_sec": VERIFIER_TIMEOUT_SEC}, "sandbox": sandbox}
    (dest / "task.md").write_text(render_task_md(frontmatter, "## prompt\n\n" + escape_headings(instruction)))
    verifier = dest / "verifier"
    verifier.mkdir(exist_ok=True)
    (verifier / "test.sh").write_text(
        "#!/bin/sh\n# The review is judged on the host; this records only whether an answer file exists.\n"
        f"mkdir -p /logs/verifier\nif [ -s {ANSWER_PATH} ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    return dest
