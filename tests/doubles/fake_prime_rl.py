#!/usr/bin/env python3
"""TEST DOUBLE: a stand-in for ``uv`` in a Prime-RL checkout (``uv run [--no-sync] sft @ CONFIG …``).

Put on PATH as ``uv`` (tests write a two-line wrapper). It records its argv and
working directory to ``$FAKE_PRIME_RL_RECORD`` (JSON), prints a few trainer-like
lines, writes a fake checkpoint under ``--output_dir`` (``step_<max_steps>/
model.safetensors``) unless ``--dry-run``, and exits with ``$FAKE_PRIME_RL_EXIT``
(default 0).

With ``tests/doubles/prime_rl_double`` on ``PYTHONPATH`` it also does what Prime-RL's trainer does with
the data and the loss, through that double's modules (imported as the trainer imports them, so BenchFlow's
run-local shim hooks them when it leads ``PYTHONPATH``): it records the micro-batches the data loader
makes of ``--data.name``'s rows and ``compute_loss`` of a fixed two-row batch, or the error that stopped it
(exit 1).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    argv = sys.argv[1:]
    flags = {argv[i][2:]: argv[i + 1] for i in range(len(argv) - 1)
             if argv[i].startswith("--") and not argv[i + 1].startswith("--")}
    seen: dict = {"argv": argv, "cwd": os.getcwd()}
    code = _train(flags, seen)
    record = os.environ.get("FAKE_PRIME_RL_RECORD")
    if record:
        Path(record).write_text(json.dumps(seen))
    if code:
        return code
    print("fake prime-rl: sft starting", flush=True)
    if "--dry-run" not in argv and "output_dir" in flags:
        step = Path(flags["output_dir"]) / f"step_{flags.get('max_steps', '1')}"
        step.mkdir(parents=True, exist_ok=True)
        (step / "model.safetensors").write_bytes(b"fake weights")
        print(f"fake prime-rl: wrote {step}", flush=True)
    return int(os.environ.get("FAKE_PRIME_RL_EXIT", "0"))


def _train(flags: dict, seen: dict) -> int:
    try:
        from prime_rl.trainer.sft import data, train
    except ImportError as exc:
        if "prime_rl" in str(exc) and "No module named" in str(exc):
            return 0  # no double on the path: argv only
        seen["error"] = str(exc)
        return 1
    except RuntimeError as exc:  # a hook refused this Prime-RL
        seen["error"] = str(exc)
        return 1
    if "data.name" in flags:
        rows = [json.loads(line) for line in Path(flags["data.name"]).read_text().splitlines() if line.strip()]
        seen["batches"] = list(data.setup_dataloader(data.SFTDataset(rows), None))
    loss_sum, count = train.compute_loss([[1.0, 3.0, 5.0], [2.0, 0.0, 0.0]], [[1, 1, 1], [1, 0, 0]])
    seen["loss"] = [float(loss_sum.item()), int(count.item())]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
