"""Redacting trainer rows fast: the shared redactor (``util.redact.redact_obj``) behind a cheap pre-check.

Every secret shape the redactor masks starts from a literal anchor (``sk-``,
``AIza``, ``ghp_``, ``-----BEGIN``, ``eyJ``, ``://``, ``bearer``, …) or a
name holding a marker word (``key``, ``token``, ``secret``, ``pass``,
``auth``, …); a string holding none of them comes out of ``redact_text``
unchanged, and a key without a marker word never names a secret field. One
case-insensitive search per string skips the twenty regex passes for the
~all strings of a conversation that hold nothing secret-looking, which keeps
10,000 rollouts within the conversion's time budget.

``tests/unit/test_train_redaction.py`` checks this against the redactor's
pattern list, so a new shape there fails the test until it is added here.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from benchflow.util.redact import redact_obj

ANCHORS = ("sk-", "aiza", "gh", "github_pat_", "xox", "hf_", "akia", "asia", "ya29.", "glpat-", "gsk_", "xai-",
           "r8_", "-----begin", "eyj", "://", "bearer", "authorization", "pass", "pwd", "secret", "token",
           "credential", "key", "auth", "cookie", ":\\/\\/")
PATTERNS_COVERED = 20
"""How many patterns ``util.redact._SECRET_PATTERNS`` had when :data:`ANCHORS` was written."""
_ANCHOR = re.compile("|".join(re.escape(a) for a in ANCHORS))
SHORT = 64


@functools.lru_cache(maxsize=1 << 16)
def _short_maybe(text: str) -> bool:
    return _ANCHOR.search(text.lower()) is not None


def _maybe(text: str) -> bool:
    """Could ``text`` hold (or name) a secret? Short strings (keys, roles, ids) repeat: cached."""
    return _short_maybe(text) if len(text) <= SHORT else _ANCHOR.search(text.lower()) is not None


def _needs(obj: Any) -> bool:
    if isinstance(obj, str):
        return _maybe(obj)
    if isinstance(obj, dict):
        return any(_maybe(k) or _needs(v) for k, v in obj.items() if isinstance(k, str))
    if isinstance(obj, list):
        return any(_needs(v) for v in obj)
    return False


def redact(obj: Any) -> Any:
    """``redact_obj(obj)``, skipping (without copying) the parts with nothing to mask."""
    if not _needs(obj):
        return obj
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    if isinstance(obj, dict) and not any(_maybe(k) for k in obj if isinstance(k, str)):
        return {k: redact(v) for k, v in obj.items()}
    return redact_obj(obj)
