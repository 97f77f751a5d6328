"""Is a rollout training-grade? Token ids and logprobs on every model call, each prompt extending the last.

Reads ``trajectory/llm_trajectory.jsonl``: each exchange may carry a
``token_capture`` block (contracts §3.5)::

    {"prompt_token_ids": [int, ...], "sampled_token_ids": [int, ...], "logprobs": [float, ...]}

A rollout is training-grade when it made at least one model call, every call
has all three lists (one logprob per sampled token), and each call's prompt
starts with the previous call's prompt followed by its sampled tokens (so the
calls form one token sequence a trainer can replay). This is the rule
``bench train token-coverage`` states; the viewer's Training tab calls
:func:`rollout_coverage`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from benchflow.jobs.layout import TrialPaths

CAPTURE_KEY = "token_capture"
LLM_NAME = TrialPaths(Path("/")).llm_trajectory.relative_to("/").as_posix()
"""The trajectory's path inside a trial folder, as the layout owns it (a string: 10,000 rollouts skip pathlib)."""


@dataclass(frozen=True)
class TokenCoverage:
    """What one rollout's model calls captured; ``reason`` says why it is not training-grade."""

    calls: int
    with_token_ids: int
    """Calls whose capture has both prompt and sampled token ids."""
    with_logprobs: int
    """Calls with one logprob per sampled token."""
    prompts_extend: bool
    """Each call's prompt = previous prompt + previous sampled tokens (+ anything after)."""
    training_grade: bool
    reason: str | None

    def as_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _ids(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    return None


def rollout_coverage(trial_dir: str | Path) -> TokenCoverage:
    """Token coverage of the trial folder's model calls (no trajectory file: no calls)."""
    path = os.path.join(os.fspath(trial_dir), LLM_NAME)
    calls = with_ids = with_logprobs = 0
    extends = True
    previous: list[int] | None = None
    unreadable = 0
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return TokenCoverage(0, 0, 0, False, False, "no model calls recorded")
    with handle:
        for line in handle:
            if not line.strip():
                continue
            calls += 1
            if CAPTURE_KEY.encode() not in line:  # most calls without capture: skip the parse
                previous = None
                extends = False
                continue
            try:
                capture = json.loads(line).get(CAPTURE_KEY)
            except (ValueError, AttributeError):
                unreadable += 1
                previous, extends = None, False
                continue
            capture = capture if isinstance(capture, dict) else {}
            prompt, sampled = _ids(capture.get("prompt_token_ids")), _ids(capture.get("sampled_token_ids"))
            logprobs = capture.get("logprobs")
            if prompt is None or sampled is None:
                previous, extends = None, False
                continue
            with_ids += 1
            if isinstance(logprobs, list) and len(logprobs) == len(sampled):
                with_logprobs += 1
            if previous is not None and prompt[:len(previous)] != previous:
                extends = False
            previous = prompt + sampled
    if calls == 0:
        return TokenCoverage(0, 0, 0, False, False, "no model calls recorded")
    if unreadable:
        reason = f"{unreadable} of {calls} model call line(s) are not valid JSON"
    elif with_ids < calls:
        reason = f"{calls - with_ids} of {calls} call(s) without token ids"
    elif with_logprobs < calls:
        reason = f"{calls - with_logprobs} of {calls} call(s) without logprobs"
    elif not extends:
        reason = "a prompt does not extend the previous call's prompt and sampled tokens"
    else:
        reason = None
    return TokenCoverage(calls, with_ids, with_logprobs, extends and with_ids == calls, reason is None, reason)
