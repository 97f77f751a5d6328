"""``bench train validate``: check trainer rows against the row rules; name each bad row and why.

Every row of every format is checked for what ``convert`` promises: roles
limited to system/user/assistant/tool, no banned row or message keys, tool
calls with unique ids, each tool message answering a call made before it, the
conversation ending in an assistant message, a reward that is a number or
null. With ``--source-jobs`` each row is traced back to its rollout
(``source_path``): the trial must exist, have a result, and (with
``--require-llm-trajectory``) a recorded exchange answered 200 at
``exchange_index``; the row's reward must be the trial's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.errors import UserError
from benchflow.jobs.layout import TrialPaths
from benchflow.records import TrialResult, Unreadable, read_record
from benchflow.records.branch import Observation

from . import rules, selection
from .formats import FORMATS
from .output import read_rows
from .source import is_ok_call, read_exchanges

MAX_LISTED = 200


@dataclass
class ValidateOptions:
    path: Path
    format: str = "prime-sft"
    expected_rows: int | None = None
    source_jobs: Path | None = None
    source_canonical_selection: Path | None = None
    task_manifest: Path | None = None
    require_llm_trajectory: bool = False
    require_tool_calls: bool = False
    tokenizer: str | None = None
    tokenizer_revision: str | None = None
    max_length: int | None = None


def _banned_keys(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        found = [k for k in obj if k in rules.BANNED_ROW_KEYS]
        return found + [k for v in obj.values() for k in _banned_keys(v)]
    if isinstance(obj, list):
        return [k for v in obj for k in _banned_keys(v)]
    return []


def check_messages(messages: Any, where: str = "messages") -> list[str]:
    """What is wrong with one conversation ([] when nothing)."""
    if not isinstance(messages, list) or not messages:
        return [f"{where}: missing or empty"]
    problems: list[str] = []
    ids: set[str] = set()
    pending: set[str] = set()
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            problems.append(f"{where}[{i}]: not an object")
            continue
        role = message.get("role")
        if role not in rules.ROLES:
            problems.append(f"{where}[{i}]: role {role!r} (allowed: system, user, assistant, tool)")
        banned = sorted(set(message) & rules.BANNED_MESSAGE_KEYS)
        if banned:
            problems.append(f"{where}[{i}]: banned key {banned[0]}")
        for call in message.get("tool_calls") or []:
            call_id = call.get("id") if isinstance(call, dict) else None
            if not isinstance(call_id, str) or not call_id or call_id in ids:
                problems.append(f"{where}[{i}]: tool call id {call_id!r} missing or repeated")
                continue
            ids.add(call_id)
            pending.add(call_id)
            arguments = (call.get("function") or {}).get("arguments")
            if not isinstance(arguments, str):
                problems.append(f"{where}[{i}]: tool call {call_id} arguments are not JSON text")
        if role == "tool":
            answered = message.get("tool_call_id")
            if answered not in pending:
                problems.append(f"{where}[{i}]: tool message answers {answered!r}, no call made before it")
            pending.discard(answered)
    last = messages[-1]
    if isinstance(last, dict) and last.get("role") != "assistant":
        problems.append(f"{where}: ends with a {last.get('role')!r} message, not the assistant's")
    return problems


def _conversation(row: dict[str, Any], fmt: str) -> tuple[list[str], Any]:
    """(problems of the row's shape, its messages as one list)."""
    if fmt == "trl-sft":
        prompt, completion = row.get("prompt"), row.get("completion")
        if not isinstance(completion, list) or len(completion) != 1:
            return ["completion: must be a list of exactly one assistant message"], None
        if not isinstance(prompt, list):
            return ["prompt: missing or not a list"], None
        tools = row.get("tools")
        problems = [] if tools is None or isinstance(tools, list) else ["tools: not a list"]
        return problems, prompt + completion
    if fmt == "branch-tree":
        prefix, continuation = row.get("prefix"), row.get("continuation")
        if not isinstance(prefix, list) or not isinstance(continuation, list) or not continuation:
            return ["prefix/continuation: each must be a list of messages, the continuation not empty"], None
        problems = [f"{key}: missing or not text" for key in ("fork", "node")
                    if not isinstance(row.get(key), str) or not row.get(key)]
        advantage = row.get("advantage", "missing")
        if advantage is not None and (not isinstance(advantage, (int, float)) or isinstance(advantage, bool)
                                      or not math.isfinite(advantage)):
            problems.append(f"advantage: {advantage!r} is not a number or null")
        return problems, prefix + continuation
    if fmt == "openenv-episodes":
        steps = row.get("steps")
        if not isinstance(steps, list) or not steps:
            return ["steps: missing or empty"], None
        if row.get("done") is not True:
            return ["done: must be true"], None
        messages: list[Any] = []
        for step in steps:
            if not isinstance(step, dict) or not isinstance(step.get("observation"), list):
                return ["steps: each step needs an observation list and an action"], None
            messages.extend(step["observation"] + [step.get("action")])
        return [], messages
    problems: list[str] = []
    key = "tool_defs" if fmt == "prime-sft" else "tools"
    tools = row.get(key)
    if fmt == "verl-sft":
        try:
            tools = json.loads(tools) if isinstance(tools, str) else tools
        except ValueError:
            problems.append("tools: not JSON text")
    if tools is not None and not isinstance(tools, list):
        problems.append(f"{key}: not a list")
    messages = row.get("messages")
    if fmt == "verl-sft" and isinstance(messages, list):  # parquet fills absent keys with null
        messages = [{k: v for k, v in m.items() if v is not None} for m in messages if isinstance(m, dict)]
    return problems, messages


def check_row(row: Any, fmt: str) -> tuple[list[str], list[Any] | None]:
    if isinstance(row, Exception):
        return [str(row)], None
    if not isinstance(row, dict):
        return ["not a JSON object"], None
    problems, messages = _conversation(row, fmt)
    if messages is not None or fmt not in ("trl-sft", "openenv-episodes", "branch-tree"):  # those two name what is missing
        problems += check_messages(messages)
    banned = _banned_keys({k: v for k, v in row.items()})
    if banned:
        problems.append(f"banned key {banned[0]}")
    reward = row.get("reward")
    if reward is not None and (not isinstance(reward, (int, float)) or isinstance(reward, bool)
                               or not math.isfinite(reward)):
        problems.append(f"reward: {reward!r} is not a number or null")
    return problems, messages


def _child_problems(row: dict[str, Any], child: Path) -> list[str]:
    """A branch-tree row traced to its child's ``observation.json``."""
    try:
        observation = read_record(Observation, child / "observation.json")
    except Unreadable as exc:
        return [f"source: {exc}"]
    if observation is None:
        return [f"source {child}: no observation.json"]
    if row.get("reward") != observation.reward:
        return [f"reward {row.get('reward')!r} differs from the source's {observation.reward!r}"]
    return []


def _source_problems(row: dict[str, Any], o: ValidateOptions, selected: set[str] | None) -> list[str]:
    source = row.get("source_path")
    if not isinstance(source, str) or not source:
        return ["source_path: missing (cannot audit the source)"]
    if o.format == "branch-tree":
        return _child_problems(row, o.source_jobs / source) if o.source_jobs else []
    trial = (o.source_jobs / source).parent.parent if o.source_jobs else None
    problems: list[str] = []
    if selected is not None:
        rel = str(Path(source).parent.parent)
        if rel not in selected and Path(rel).name not in selected:
            problems.append(f"source {rel}: not in --source-canonical-selection")
    if trial is None:
        return problems
    try:
        result = read_record(TrialResult, TrialPaths(trial).result, name=trial.name)
    except Unreadable as exc:
        return problems + [f"source: {exc}"]
    if result is None:
        return problems + [f"source {trial}: no result.json"]
    if row.get("reward") != result.reward:
        problems.append(f"reward {row.get('reward')!r} differs from the source's {result.reward!r}")
    if o.require_llm_trajectory:
        path = TrialPaths(trial).llm_trajectory
        if not path.is_file():
            return problems + [f"source {path}: missing"]
        exchanges = dict(read_exchanges(path))
        found = exchanges.get(row.get("exchange_index"))
        if found is None or not is_ok_call(found):
            problems.append(f"source {path}: no model call answered 200 at exchange_index "
                            f"{row.get('exchange_index')!r}")
    return problems


def validate(o: ValidateOptions) -> dict[str, Any]:
    """The report: ``{ok, rows, bad_rows, problems: [{row, problem}], ...}``."""
    if o.format not in FORMATS:
        raise UserError(f"--format {o.format!r}: unknown; use one of {', '.join(FORMATS)}")
    if not o.path.is_file():
        raise UserError(f"{o.path}: no such file; give the trainer JSONL (or parquet for verl-sft)")
    if o.source_jobs is not None and not o.source_jobs.is_dir():
        raise UserError(f"--source-jobs {o.source_jobs}: not a folder")
    if (o.tokenizer is None) != (o.max_length is None):
        raise UserError("--tokenizer and --max-length go together: give both to check rendered lengths")
    windower = None
    if o.tokenizer is not None:
        from .window import Windower

        windower = Windower.load(o.tokenizer, o.tokenizer_revision, o.max_length)
    selected = (selection.rollout_names(o.source_canonical_selection, "--source-canonical-selection")
                if o.source_canonical_selection else None)
    tasks = selection.task_names(o.task_manifest) if o.task_manifest else None
    rows = read_rows(o.path, o.format)
    problems: list[dict[str, Any]] = []
    bad: set[int] = set()
    for number, row in enumerate(rows, start=1):
        found, messages = check_row(row, o.format)
        if isinstance(row, dict):
            if o.require_tool_calls and messages is not None and not rules.has_tool_calls(messages):
                found.append("no tool call in the row (--require-tool-calls)")
            if tasks is not None:
                task = row.get("task_name") or row.get("task_id") or row.get("env")
                if task not in tasks:
                    found.append(f"task {task!r}: not in --task-manifest")
            if o.source_jobs is not None or selected is not None:
                found += _source_problems(row, o, selected)
            if windower is not None and messages is not None:
                length = windower.length(messages, row.get("tools") or row.get("tool_defs") or [])
                if length > (o.max_length or 0):
                    found.append(f"renders to {length} tokens, over --max-length {o.max_length}")
        for problem in found:
            problems.append({"row": number, "problem": problem})
        if found:
            bad.add(number)
    summary: list[str] = []
    if o.expected_rows is not None and len(rows) != o.expected_rows:
        summary.append(f"{len(rows)} row(s), --expected-rows {o.expected_rows}")
    if not rows:
        summary.append("no rows")
    return {"kind": "benchflow.train-validate", "schema_version": 1, "path": str(o.path), "format": o.format,
            "rows": len(rows), "bad_rows": len(bad), "problems": problems, "file_problems": summary,
            "ok": not bad and not summary}


def render_report(report: dict[str, Any]) -> str:
    lines = [f"row {p['row']}: {p['problem']}" for p in report["problems"][:MAX_LISTED]]
    if len(report["problems"]) > MAX_LISTED:
        lines.append(f"... and {len(report['problems']) - MAX_LISTED} more problem(s)")
    lines += [f"file: {line}" for line in report["file_problems"]]
    verdict = "OK" if report["ok"] else "FAILED"
    lines.append(f"{verdict}: {report['rows']} row(s), {report['bad_rows']} bad ({report['format']}, "
                 f"{report['path']})")
    return "\n".join(lines)
