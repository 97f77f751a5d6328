"""What a host-side verifier strategy works with, and the helpers the strategies share."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError, VerifierError
from benchflow.util import atomic, nofollow

MAX_INPUT_BYTES = 64 << 10
"""Bytes of one input file a judge sees (the head; the rest is marked as cut)."""
MAX_PROMPT_INPUT_BYTES = 400 << 10
"""Bytes of all inputs of one judge prompt together."""


@dataclass
class StrategyContext:
    """One verification by a host-side strategy (the agent is already fenced off)."""

    sandbox: Any
    task: Any
    verifier_dir: Path
    """The trial's verifier/ folder: reward files and inputs go here."""
    trial_dir: Path
    """Rollout-relative inputs (``agent/…``, ``trajectory/…``) are read from here."""
    env: dict[str, str]
    """The task's ``verifier.env`` as filled for this run (judge keys live here, nowhere else)."""
    gateway: Any = None
    """The job's model gateway, or None (a private one is started for a judge call)."""
    strategy_name: str | None = None
    strategy: Any = None
    roles: dict[str, str] = field(default_factory=dict)
    """``## role:<name>`` prompts of verifier.md."""
    label: str = "verifier"


def fail(message: str, category: str = "verifier_failure") -> VerifierError:
    """A verifier error (never a score of 0), worded so the classifier files it as ``category``."""
    return VerifierError(f"verifier crashed: {message}", category=category)


def inside(base: Path, rel: str, what: str) -> Path:
    """``base / rel`` when it stays inside ``base`` (no absolute path, no ``..``, no link out).

    Raises:
        VerifierError: it would lead out.
    """
    parts = rel.replace("\\", "/").split("/")
    if rel.startswith("/") or ".." in parts:
        raise fail(f"{what} {rel!r} must be a relative path inside its folder (no '/' start, no '..')")
    path = base / rel
    real, root = os.path.realpath(path), os.path.realpath(base)
    if real != root and not real.startswith(root.rstrip("/") + "/"):
        raise fail(f"{what} {rel!r} leads out of its folder through a link")
    return path


async def download(sandbox: Any, remote: str, local: Path, what: str, *, missing_ok: bool = False) -> None:
    """Copy ``remote`` out of the sandbox through the safe copy-out (links out, devices dropped);
    a missing ``remote`` is a verifier error unless ``missing_ok`` (the judge then sees it missing)."""
    try:
        await sandbox.get(remote, local)
    except FileNotFoundError:
        if not missing_ok:
            raise fail(f"{what} {remote} does not exist in the sandbox") from None
    except BenchError as exc:
        raise fail(f"failed to download {what} {remote}: {exc}", "verifier_infra") from None


def read_inputs(paths: list[tuple[str, Path]], budget: int = MAX_PROMPT_INPUT_BYTES) -> str:
    """The files under each (label, path), as text blocks for a prompt; capped per file and overall."""
    blocks: list[str] = []
    for label, path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) \
            if path.is_dir() else []
        if not files:
            blocks.append(f"=== {label}: (missing or empty)")
        for file in files:
            name = label if file == path else f"{label}/{file.relative_to(path).as_posix()}"
            if budget <= 0:
                blocks.append(f"=== {name}: (left out: the prompt's input budget is spent)")
                continue
            try:
                with nofollow.open_file(file) as handle:
                    size = os.fstat(handle.fileno()).st_size
                    data = handle.read(min(MAX_INPUT_BYTES, budget))
            except OSError:
                blocks.append(f"=== {name}: (unreadable)")
                continue
            budget -= len(data)
            text = data.decode("utf-8", errors="replace")
            cut = f"\n[… {size - len(data)} more bytes cut]" if len(data) < size else ""
            blocks.append(f"=== {name}\n{text}{cut}")
    return "\n\n".join(blocks)


_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def reply_json(text: str) -> dict[str, Any]:
    """The JSON object of a judge's reply (bare, or in a fenced block).

    Raises:
        VerifierError: no JSON object in it.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise fail(f"the judge's reply holds no JSON object: {text[:200]!r}")


def score_of(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= float(value) <= 1:
        raise fail(f"the judge's {where} {value!r} is not a number from 0 to 1")
    return float(value)


def write_rewards(verifier_dir: Path, reward: dict[str, Any], details: dict[str, Any]) -> None:
    atomic.write_json(verifier_dir / "reward.json", reward)
    atomic.write_json(verifier_dir / "reward-details.json", details)
