"""Resolve the prompts a trial sends: ``--prompt`` list, ``@instruction``, prefix and extra text."""

from __future__ import annotations

INSTRUCTION_REF = "@instruction"


def resolve_prompts(instruction: str, prompts: list[str], *, prefix: str | None = None,
                    extra_instruction: str | None = None) -> list[str]:
    """The prompts in order: each ``@instruction`` (or the default) is the task instruction
    with ``extra_instruction`` appended; ``prefix`` is prepended to every prompt."""
    base = instruction.rstrip()
    if extra_instruction:
        base = f"{base}\n\n{extra_instruction.strip()}"
    resolved = [base if p in (INSTRUCTION_REF, "") else p for p in (prompts or [INSTRUCTION_REF])]
    if prefix:
        resolved = [f"{prefix}\n\n{p}" for p in resolved]
    return resolved
