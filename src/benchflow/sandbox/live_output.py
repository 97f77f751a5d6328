"""A command's live output on this terminal: what ``bench sandbox exec`` shows of a kept sandbox."""

from __future__ import annotations

import asyncio
import sys
from typing import Any


async def relay(process: Any) -> int:
    """Close ``process``'s stdin, copy its stdout and stderr to ours as they come; its exit code."""
    process.stdin.close()

    async def copy(reader: Any, out: Any) -> None:
        while chunk := await reader.read(65536):
            out.write(chunk)
            out.flush()

    await asyncio.gather(copy(process.stdout, sys.stdout.buffer), copy(process.stderr, sys.stderr.buffer))
    return await process.wait()
