"""A rollout's turns as the plain text a judge reads.

Each turn is one block headed by its number and source; an agent turn shows its reasoning, its message,
then each tool call (name, arguments) and what it returned. Long texts are cut per piece, and a
rollout longer than the prompt's budget keeps its opening (a quarter of the budget: the request) and
as much of its end as fits, with a line saying how many turns were left out between.
"""

from __future__ import annotations

import json

from benchflow.interop.turns import Turn
from benchflow.verify.strategies.context import MAX_PROMPT_INPUT_BYTES

MAX_TEXT_CHARS = 8000
"""Characters of one message or reasoning text shown (the rest is marked as cut)."""
MAX_TOOL_CHARS = 4000
"""Characters of one tool call's arguments or output shown."""


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[… {len(text) - limit} more characters cut]"


def _block(number: int, turn: Turn) -> str:
    lines = [f"--- turn {number}: {turn.source}"]
    if turn.reasoning:
        lines.append("(thinking) " + clip(turn.reasoning, MAX_TEXT_CHARS))
    if turn.message:
        lines.append(clip(turn.message, MAX_TEXT_CHARS))
    for tool in turn.tools:
        arguments = json.dumps(tool.arguments, ensure_ascii=False, default=str)
        lines.append(f"> tool call {tool.name} [{tool.id}]: {clip(arguments, MAX_TOOL_CHARS)}")
        if tool.output is None:
            lines.append(f"< [{tool.id}] (no result recorded)")
        else:
            failed = " (failed)" if tool.failed else ""
            lines.append(f"< [{tool.id}]{failed}: {clip(tool.output, MAX_TOOL_CHARS)}")
    return "\n".join(lines)


def render(turns: list[Turn], budget: int = MAX_PROMPT_INPUT_BYTES) -> tuple[str, int]:
    """(the transcript text, how many turns were left out to fit ``budget`` bytes)."""
    blocks = [_block(n, turn) for n, turn in enumerate(turns, 1)]
    sizes = [len(b.encode("utf-8")) + 2 for b in blocks]
    if sum(sizes) <= budget:
        return "\n\n".join(blocks), 0
    head, used = 0, 0
    while head < len(blocks) and used + sizes[head] <= budget // 4:
        used += sizes[head]
        head += 1
    tail = len(blocks)
    while tail > head and used + sizes[tail - 1] <= budget:
        tail -= 1
        used += sizes[tail]
    cut = tail - head
    marker = f"[… {cut} turn(s) left out here to fit the judge's prompt …]"
    return "\n\n".join([*blocks[:head], marker, *blocks[tail:]]), cut
