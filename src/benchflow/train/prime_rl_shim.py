"""The run-local Prime-RL hooks ``bench train run sft`` switches on (:mod:`.prime_rl_site`).

Prime-RL's SFT trainer has neither per-row mean loss nor pretokenized rows; the hooks give it both for one
run without changing its files: ``prime_rl_site.py`` is copied to ``<work-dir>/prime-rl-shim/sitecustomize.py``,
which the trainer's Python imports at start-up when the folder leads its ``PYTHONPATH``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchflow.util import atomic

SITE = Path(__file__).with_name("prime_rl_site.py")
PRETOKENIZED_ENV = "BENCHFLOW_PRIME_RL_PRETOKENIZED"
SAMPLE_MEAN_ENV = "BENCHFLOW_PRIME_RL_SAMPLE_MEAN"


def install(work: Path, *, pretokenized: bool, sample_mean: bool) -> tuple[dict[str, str], dict[str, Any] | None]:
    """(environment variables for the trainer, the shim's record for train-run.json); nothing when no hook is on."""
    if not pretokenized and not sample_mean:
        return {}, None
    folder = (work / "prime-rl-shim").resolve()
    atomic.write_text(folder / "sitecustomize.py", SITE.read_text(encoding="utf-8"))
    flags = {PRETOKENIZED_ENV: pretokenized, SAMPLE_MEAN_ENV: sample_mean}
    env = {name: "1" for name, on in flags.items() if on}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    record = {"path": str(folder / "sitecustomize.py"), "hooks": [name for name, on in flags.items() if on]}
    return env, record
