"""UTC timestamps as the hub stores them (ISO 8601, seconds, ``Z``)."""

from __future__ import annotations

import time


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
