"""Token-capture blocks of ``llm_trajectory.jsonl``: per-call records and training-grade coverage.

The gateway writes, per model call whose upstream returned them, a
``token_capture`` block: ``prompt_token_ids``, ``sampled_token_ids`` and
``logprobs`` (one per sampled token). A rollout is *training-grade* when every
successful model call has all three (as many logprobs as sampled tokens) and
each call's prompt starts with the previous call's prompt followed by its
sampled tokens — so the trainer can rebuild the exact sequence the policy saw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchflow.errors import UserError

from .source import harbor_job_of, is_ok_call, read_exchanges, read_rollout, trial_folders

_FIELDS = ("prompt_token_ids", "sampled_token_ids", "logprobs")


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def capture_of(exchange: dict[str, Any]) -> dict[str, Any] | None:
    block = exchange.get("token_capture")
    return block if isinstance(block, dict) else None


def calls(path: Path) -> list[dict[str, Any]]:
    """Per successful model call: ``exchange_index`` and, when captured, its token ids and logprobs."""
    out = []
    for index, exchange in read_exchanges(path):
        if exchange is None or not is_ok_call(exchange):
            continue
        block = capture_of(exchange) or {}
        out.append({"exchange_index": index, **{k: block.get(k) for k in _FIELDS}})
    return out


def grade(path: Path) -> dict[str, Any]:
    """Coverage of one ``llm_trajectory.jsonl``: counts per field, extension, training_grade, why not."""
    found = calls(path) if path.is_file() else []
    counts = {"calls": len(found), "with_prompt_token_ids": 0, "with_sampled_token_ids": 0, "with_logprobs": 0}
    reasons: list[str] = []
    previous: list[int] | None = None
    extends = True
    for call in found:
        prompt, sampled, logprobs = (call[k] for k in _FIELDS)
        counts["with_prompt_token_ids"] += _ints(prompt)
        counts["with_sampled_token_ids"] += _ints(sampled)
        ok_logprobs = isinstance(logprobs, list) and _ints(sampled) and len(logprobs) == len(sampled)
        counts["with_logprobs"] += ok_logprobs
        if previous is not None and _ints(prompt) and prompt[:len(previous)] != previous:
            extends = False
        previous = prompt + sampled if _ints(prompt) and _ints(sampled) else None
    if not found:
        reasons.append("no successful model call")
    for name, key in (("prompt token ids", "with_prompt_token_ids"), ("sampled token ids", "with_sampled_token_ids"),
                      ("logprobs", "with_logprobs")):
        if found and counts[key] < len(found):
            reasons.append(f"{len(found) - counts[key]} call(s) without {name}")
    if not extends:
        reasons.append("a prompt does not extend the previous call's prompt and sampled tokens")
    return {**counts, "extends_previous": extends, "training_grade": not reasons, "reasons": reasons}


def coverage(root: Path) -> dict[str, Any]:
    """The report over every rollout under ``root``.

    Raises:
        UserError: ``root`` is a Harbor job or trial, which records no model calls.
    """
    if harbor_job_of(root) is not None:
        raise UserError(f"{root}: written by Harbor, which keeps no model calls (trajectory/llm_trajectory.jsonl, "
                        "whose token ids this reports)")
    rows, notes = [], []
    for trial, job, rel in trial_folders(root):
        rollout = read_rollout(trial, job, rel, notes)
        if rollout is None:
            continue
        rows.append({"trial": rel, "task_name": rollout.task, **grade(trial.llm_trajectory)})
    return {"kind": "benchflow.token-coverage", "schema_version": 1, "path": str(root), "rollouts": len(rows),
            "training_grade": sum(r["training_grade"] for r in rows), "rows": rows, "notes": notes}


def render_coverage(report: dict[str, Any]) -> str:
    lines = []
    for row in report["rows"]:
        verdict = "training-grade" if row["training_grade"] else "not training-grade: " + "; ".join(row["reasons"])
        lines.append(f"{row['trial']}: {row['calls']} call(s), prompt ids {row['with_prompt_token_ids']}, "
                     f"sampled ids {row['with_sampled_token_ids']}, logprobs {row['with_logprobs']} — {verdict}")
    lines.append(f"{report['training_grade']} of {report['rollouts']} rollout(s) training-grade")
    return "\n".join(lines)
