"""``--self-gen-no-internet``: the agent of a self-generated run gets no web tools.

Each agent's switch is data (``web_tools.toml``): a system-wide settings file its user cannot override,
merged (as root, before the agent starts) with what the image already has there. The files are read and
written through the sandbox's exec; the merge is done here, so no interpreter is needed in the image.
Controls (the oracle, nop) have no web tools; an agent with no entry is refused before anything starts.
"""

from __future__ import annotations

import json
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from benchflow.errors import BenchError

_WRITE = 'mkdir -p "$(dirname "$0")" && cat > "$0.benchflow" && chmod 644 "$0.benchflow" && mv "$0.benchflow" "$0"'


@cache
def switches() -> dict[str, dict[str, Any]]:
    """Agent name -> ``{path, format, set}``."""
    return tomllib.loads((Path(__file__).parent / "web_tools.toml").read_text(encoding="utf-8"))


def merge(current: Any, wanted: Any) -> Any:
    """``wanted`` laid over ``current``: tables merged key by key, lists gaining their missing items."""
    if isinstance(current, dict) and isinstance(wanted, dict):
        return {**current, **{k: merge(current.get(k), v) for k, v in wanted.items()}}
    if isinstance(current, list) and isinstance(wanted, list):
        return current + [item for item in wanted if item not in current]
    return wanted


def _parse(text: str, fmt: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    data = json.loads(text) if fmt == "json" else tomllib.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a table")
    return data


def _dump(data: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    import tomli_w

    return tomli_w.dumps(data)


async def turn_off(sandbox: Any, agent_name: str) -> dict[str, Any]:
    """Turn the agent's web tools off in ``sandbox``; what was written (for ``config.json``).

    Raises:
        BenchError: no switch for this agent, or the settings file could not be read or written.
    """
    switch = switches().get(agent_name)
    if switch is None:
        raise BenchError(f"--self-gen-no-internet: no way to turn off {agent_name}'s web tools is known")
    path, fmt = switch["path"], switch["format"]
    read = await sandbox.exec(["sh", "-c", '[ ! -e "$0" ] || cat "$0"', path], timeout=60)
    try:
        merged = merge(_parse(read.stdout, fmt) if read.success else {}, switch["set"])
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise BenchError(f"--self-gen-no-internet: {path} in the image is not valid {fmt} ({exc}); "
                         "its web tools cannot be turned off") from None
    wrote = await sandbox.exec(["sh", "-c", _WRITE, path], stdin=_dump(merged, fmt).encode(), timeout=60)
    if not wrote.success:
        raise BenchError(f"--self-gen-no-internet: writing {path} failed: {wrote.stderr.strip()[-200:]}")
    return {"path": path, "set": switch["set"]}
