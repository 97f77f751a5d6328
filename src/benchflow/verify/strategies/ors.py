"""``ors-episode``: the reward of an episode recorded as ORS reward records (contracts §2.5).

The strategy's ``inputs`` name record files (rollout-relative, or sandbox paths
copied out to ``verifier/ors-episode-inputs/``); ``format`` is ``json`` (one
record, a list, or ``{"records": [...]}`` / ``{"steps": [...]}``), ``jsonl``
(one record a line) or ``auto`` (by the file's name, else by its first
character). A record is an object with a numeric ``reward``. The episode's
reward is that of its terminal record: the last one marked ``done`` (or
``terminal`` / ``finished``), else the last one. Anything else is a parse
error (a verifier error), never a 0.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .context import StrategyContext, fail, write_rewards
from .judges import gather_inputs

MAX_RECORD_FILE_BYTES = 64 << 20


def _records(path: Path, fmt: str) -> list[Any]:
    if path.is_dir():
        return [r for child in sorted(p for p in path.rglob("*") if p.is_file()) for r in _records(child, fmt)]
    if not path.is_file():
        raise fail(f"ors-episode input {path.name} is missing")
    if path.stat().st_size > MAX_RECORD_FILE_BYTES:
        raise fail(f"ors-episode input {path.name} is larger than {MAX_RECORD_FILE_BYTES >> 20} MiB")
    text = path.read_text(encoding="utf-8", errors="replace")
    if fmt == "auto":
        fmt = "jsonl" if path.suffix == ".jsonl" else "json" if path.suffix == ".json" else \
            ("json" if text.lstrip()[:1] == "[" else "jsonl")
    try:
        if fmt == "jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"ors-episode input {path.name} is not {fmt} ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, dict):
        for key in ("records", "steps"):
            if isinstance(data.get(key), list):
                return data[key]
        return [data]
    return data if isinstance(data, list) else [data]


def terminal(records: list[Any]) -> tuple[int, float]:
    """(index, reward) of the episode's terminal record."""
    if not records:
        raise fail("ors-episode inputs hold no reward record")
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise fail(f"ors-episode record {i} is not an object")
        value = record.get("reward")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise fail(f"ors-episode record {i} has no numeric 'reward'")
    done = [i for i, r in enumerate(records) if any(r.get(k) is True for k in ("done", "terminal", "finished"))]
    index = done[-1] if done else len(records) - 1
    return index, float(records[index]["reward"])


async def ors_episode(ctx: StrategyContext) -> None:
    fmt = ctx.strategy.format or "auto"
    inputs = await gather_inputs(ctx, "ors-episode-inputs")
    records = [r for _label, path in inputs for r in _records(path, fmt)]
    index, reward = terminal(records)
    ors = {"n_records": len(records), "terminal_index": index, "format": fmt,
           "inputs": [label for label, _ in inputs]}
    metadata = {"source": "ors-episode", "strategy": ctx.strategy_name, "ors": ors}
    write_rewards(ctx.verifier_dir, {"reward": reward, "metadata": metadata}, {
        **metadata, "records": records[:1000], "aggregate": {"reward": reward, "method": "ors-terminal"}})
