"""The one duration parser: ``90``, ``90s``, ``10m``, ``1h``, ``30d``; ``0``/``none`` is off."""

from __future__ import annotations

import re

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)


def parse_duration(text: str | int | float | None, *, allow_off: bool = True) -> float | None:
    """Seconds for ``text``; ``None`` when it turns the limit off (``0``, ``none``, ``off``).

    Raises:
        ValueError: the text is not a duration; the message says what is accepted.
    """
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text)
    else:
        raw = str(text).strip().lower()
        if raw in {"none", "off", "never"}:
            if allow_off:
                return None
            raise ValueError(f"'{text}' is not a duration here: give seconds or 90s, 10m, 1h, 30d")
        match = _PATTERN.match(raw)
        if not match:
            raise ValueError(f"'{text}' is not a duration: give seconds or 90s, 10m, 1h, 30d")
        seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if seconds < 0:
        raise ValueError(f"'{text}' is negative: a duration is 0 or more")
    if seconds == 0 and allow_off:
        return None
    return seconds
