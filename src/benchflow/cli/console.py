"""The console command output is printed on.

On a terminal, Rich lays tables out to the screen's width. Anywhere else (a
pipe, a file) there is no screen: a table is laid out at its natural width so
no identifier is wrapped, folded or cut (``bench agents | grep claude-agent-acp``).
"""

from __future__ import annotations

import sys
from typing import Any

NATURAL_WIDTH = 100_000
"""Wide enough that no table of ours is ever narrowed."""


def stdout_console() -> Any:
    """A ``rich`` console for stdout that never wraps when stdout is not a terminal."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False, soft_wrap=True)
    return Console(highlight=False, soft_wrap=True, width=NATURAL_WIDTH)
