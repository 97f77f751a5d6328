"""The one redactor: what looks secret never reaches disk.

Two jobs: decide whether an environment variable *name* (or value) looks
secret, so configs drop it; and mask secret *shapes* (API keys, bearer tokens)
inside free text such as trajectories and bundled files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

_SECRET_NAME_MARKERS = (
    "KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIALS", "COOKIE",
    "AUTHORIZATION", "AUTH", "BEARER", "SESSION",
)

# Known provider key shapes and generic bearer/authorization forms.
_SECRET_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{10,}"),
    re.compile(r"sk-(?:proj-|or-v1-|live-|test-)?[A-Za-z0-9_\-]{16,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{30,}"),
    re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"hf_[A-Za-z0-9]{30,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:)[^/\s@]{3,}(?=@)"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/\-]{12,}=*"),
    re.compile(r"(?i)((?:x-api-key|api[_-]?key|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{8,}"),
)


_SECRET_FIELD_NAMES = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "api_key", "apikey",
    "password", "secret", "token", "access_token", "refresh_token", "id_token", "cookie",
    "set-cookie", "x-goog-api-key",
})


def is_secret_name(name: str) -> bool:
    """True when an environment variable name looks like it holds a secret."""
    upper = name.upper()
    return any(marker in upper for marker in _SECRET_NAME_MARKERS)


def is_secret_entry(name: str, value: str) -> bool:
    """True when an env entry must not be written: secret-looking name, gateway URL or key shape."""
    if is_secret_name(name):
        return True
    if name.upper().endswith("BASE_URL") and "/__benchflow/" in value:
        return True
    return redact_text(value) != value


def drop_secrets(env: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of ``env`` without the secret-looking entries."""
    return {k: v for k, v in (env or {}).items() if not is_secret_entry(k, str(v))}


def redact_text(text: str, extra_values: list[str] | tuple[str, ...] = ()) -> str:
    """Mask secret shapes in ``text``, and every exact value in ``extra_values``."""
    for value in extra_values:
        if value and len(value) >= 6:
            text = text.replace(value, MASK)
    for pattern in _SECRET_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
        else:
            text = pattern.sub(MASK, text)
    return text


def _is_secret_field(key: str) -> bool:
    """A JSON field whose string value is a secret: a header/credential field or an env-style name."""
    if key.lower() in _SECRET_FIELD_NAMES:
        return True
    return key.isupper() and is_secret_name(key)


def redact_obj(obj: Any, extra_values: list[str] | tuple[str, ...] = ()) -> Any:
    """Redact every string inside a JSON-like object; secret-named keys get masked values."""
    if isinstance(obj, str):
        return redact_text(obj, extra_values)
    if isinstance(obj, Mapping):
        out = {}
        for key, value in obj.items():
            if isinstance(value, str) and isinstance(key, str) and value and _is_secret_field(key):
                out[key] = MASK
            else:
                out[key] = redact_obj(value, extra_values)
        return out
    if isinstance(obj, list):
        return [redact_obj(item, extra_values) for item in obj]
    return obj
