#!/usr/bin/env python3
"""TEST DOUBLE: a stand-in for ``uv`` in a Prime-RL checkout (``uv run [--no-sync] sft @ CONFIG …``).

Put on PATH as ``uv`` (tests write a two-line wrapper). It records its argv and
working directory to ``$FAKE_PRIME_RL_RECORD`` (JSON), prints a few trainer-like
lines, writes a fake checkpoint under ``--output_dir`` (``step_<max_steps>/
model.safetensors``) unless ``--dry-run``, and exits with ``$FAKE_PRIME_RL_EXIT``
(default 0).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    argv = sys.argv[1:]
    record = os.environ.get("FAKE_PRIME_RL_RECORD")
    if record:
        Path(record).write_text(json.dumps({"argv": argv, "cwd": os.getcwd()}))
    flags = {argv[i][2:]: argv[i + 1] for i in range(len(argv) - 1)
             if argv[i].startswith("--") and not argv[i + 1].startswith("--")}
    print("fake prime-rl: sft starting", flush=True)
    if "--dry-run" not in argv and "output_dir" in flags:
        step = Path(flags["output_dir"]) / f"step_{flags.get('max_steps', '1')}"
        step.mkdir(parents=True, exist_ok=True)
        (step / "model.safetensors").write_bytes(b"fake weights")
        print(f"fake prime-rl: wrote {step}", flush=True)
    return int(os.environ.get("FAKE_PRIME_RL_EXIT", "0"))


if __name__ == "__main__":
    raise SystemExit(main())
