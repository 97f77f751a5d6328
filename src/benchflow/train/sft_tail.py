"""``--message-tail-truncation``: fit local Prime-SFT rows into Prime-RL's sample window before it tokenizes them.

The window is ``data.seq_len * data.micro_batch_size`` tokens (Prime-RL's defaults 128 and 1; the config or
``--override`` may set them). Lengths are those of the model's own chat template (``model.name``'s
tokenizer, through ``transformers``), counted after Prime-RL's one-token shift.

- ``keep-first-user``: a row that does not fit keeps its first user message (the instruction) and the
  longest run of final messages that fits with it; a row whose instruction alone does not fit is refused.
- ``custom-trainer-pretokenized``: every row is rendered whole as the historical custom trainer rendered it
  (tool-call arguments as objects, the row's ``tools`` only: ``tool_defs`` are left out), its last
  ``window`` tokens kept, and staged as shifted ``benchflow_input_ids`` / ``benchflow_target_ids`` /
  ``benchflow_loss_mask`` / ``benchflow_position_ids`` (every token trained, or with
  ``label_last_assistant_only`` the last assistant message only). Prime-RL trains such rows through the
  run-local shim of :mod:`.prime_rl_shim`, one row per micro-batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchflow.errors import UserError

MODES = ("off", "keep-first-user", "custom-trainer-pretokenized")
PRETOKENIZED = "custom-trainer-pretokenized"
DROPPED_WHEN_PRETOKENIZED = ("messages", "tools", "tool_defs", "chat_template_kwargs", "label_last_assistant_only")


@dataclass
class TailStats:
    mode: str
    window: int
    rows: int = 0
    truncated_rows: int = 0
    max_tokens_before: int = 0
    max_tokens_after: int = 0
    trainable_tokens: int | None = None

    def record(self) -> dict[str, Any]:
        return {key: value for key, value in vars(self).items() if value is not None}


def load_tokenizer(model_name: str) -> Any:
    """The model's tokenizer with its chat template (a hub id or a local folder; no remote code runs).

    Raises:
        UserError: ``transformers`` is missing, or the tokenizer cannot be loaded.
    """
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UserError("--message-tail-truncation needs transformers: pip install 'benchflow[train]'") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_name)
    except (OSError, ValueError) as exc:
        raise UserError(f"model.name {model_name}: its tokenizer cannot be loaded "
                        f"({str(exc).splitlines()[0][:200]})") from None
    if not getattr(tokenizer, "chat_template", None):
        raise UserError(f"model.name {model_name}: its tokenizer has no chat template to measure rows with")
    return tokenizer


def _tools(row: dict[str, Any], key_order: tuple[str, ...]) -> list[dict[str, Any]] | None:
    for key in key_order:
        value = row.get(key)
        if isinstance(value, str):
            value = json.loads(value)
        if value:
            return [tool if "function" in tool else {"type": "function", "function": tool} for tool in value]
    return None


def _with_object_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call arguments as objects, as chat templates iterate them (JSON text that is not JSON: ``raw``)."""
    out = []
    for message in messages:
        message = dict(message)
        calls = []
        for call in message.get("tool_calls") or []:
            function = dict(call.get("function") or {})
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    arguments = {"raw": arguments}
            calls.append({**call, "function": {**function, "arguments": arguments or {}}})
        if calls:
            message["tool_calls"] = calls
        out.append(message)
    return out


def _ids(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
         kwargs: dict[str, Any], generation_prompt: bool = False) -> list[int]:
    from jinja2 import TemplateError

    try:
        text = tokenizer.apply_chat_template(_with_object_arguments(messages), tools=tools, tokenize=False,
                                             add_generation_prompt=generation_prompt, **kwargs)
    except TemplateError as exc:  # the template's own raise_exception: a conversation it does not take
        raise ValueError(f"the chat template refuses it ({exc})") from None
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def keep_first_user(tokenizer: Any, row: dict[str, Any], window: int) -> tuple[list[dict[str, Any]], int, int]:
    """(the row's messages fitted to ``window``, tokens before, tokens after), lengths after the shift.

    Raises:
        ValueError: the row does not fit and has no user message, or its first one alone does not fit.
    """
    messages = list(row.get("messages") or [])
    tools = _tools(row, ("tools", "tool_defs"))
    kwargs = row.get("chat_template_kwargs") or {}

    def length(candidate: list[dict[str, Any]]) -> int:
        return len(_ids(tokenizer, candidate, tools, kwargs)) - 1

    before = length(messages)
    if before <= window:
        return messages, before, before
    first = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    if first is None:
        raise ValueError(f"{before} tokens over the window of {window}, and no user message to keep")
    low, high, best = first + 1, len(messages), None
    while low < high:  # the earliest start whose suffix fits (or that the template takes)
        middle = (low + high) // 2
        try:
            fits = length([messages[first], *messages[middle:]]) <= window
        except ValueError:
            fits = False
        if fits:
            best, high = middle, middle
        else:
            low = middle + 1
    kept = [messages[first], *(messages[best:] if best is not None else [])]
    after = length(kept)
    if after > window:
        raise ValueError(f"its first user message alone is {after} tokens, over the window of {window}")
    return kept, before, after


def pretokenize(tokenizer: Any, row: dict[str, Any], window: int) -> tuple[dict[str, Any], int, int, int]:
    """(the staged row, tokens before, tokens kept, trainable tokens).

    Raises:
        ValueError: fewer than two tokens, or none trainable in the kept tail.
    """
    messages = list(row.get("messages") or [])
    tools = _tools(row, ("tools",))
    ids = _ids(tokenizer, messages, tools, {})
    trainable = [True] * len(ids)
    if row.get("label_last_assistant_only") and messages and messages[-1].get("role") == "assistant":
        prefix = min(len(_ids(tokenizer, messages[:-1], tools, {}, generation_prompt=True)), len(ids))
        trainable = [False] * prefix + trainable[prefix:]
    before = len(ids)
    ids, trainable = ids[-window:], trainable[-window:]
    if len(ids) < 2:
        raise ValueError("fewer than 2 tokens to train on")
    mask = trainable[1:]
    if not any(mask):
        raise ValueError("no trainable token in the kept tail")
    staged = {key: value for key, value in row.items() if key not in DROPPED_WHEN_PRETOKENIZED}
    staged.update({
        "benchflow_custom_trainer_pretokenized": {"original_token_count": before, "staged_token_count": len(ids),
                                                  "trainable_token_count": sum(mask)},
        "benchflow_input_ids": ids[:-1], "benchflow_target_ids": ids[1:], "benchflow_loss_mask": mask,
        "benchflow_position_ids": list(range(len(ids) - 1))})
    return staged, before, len(ids), sum(mask)


def apply(rows: list[dict[str, Any]], mode: str, tokenizer: Any, window: int, source: str) -> TailStats:
    """Fit every row (in place) to ``window``; returns the counts for train-run.json.

    Raises:
        UserError: a row that cannot be fitted (its line named).
    """
    stats = TailStats(mode=mode, window=window, trainable_tokens=0 if mode == PRETOKENIZED else None)
    for number, row in enumerate(rows, start=1):
        try:
            if mode == PRETOKENIZED:
                staged, before, after, trainable = pretokenize(tokenizer, row, window)
                row.clear()
                row.update(staged)
                stats.trainable_tokens = (stats.trainable_tokens or 0) + trainable
            else:
                row["messages"], before, after = keep_first_user(tokenizer, row, window)
        except ValueError as exc:
            raise UserError(f"--data {source}: line {number}: {exc}; raise data.seq_len or drop the row") from None
        stats.rows += 1
        stats.truncated_rows += after < before
        stats.max_tokens_before = max(stats.max_tokens_before, before)
        stats.max_tokens_after = max(stats.max_tokens_after, after)
    return stats
