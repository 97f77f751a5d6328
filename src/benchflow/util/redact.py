"""The one redactor: what looks secret never reaches disk.

Two jobs: decide whether an environment variable *name* (or value) looks
secret, so configs drop it; and mask secret *shapes* inside free text such as
trajectories and bundled files: provider key shapes, bearer and Basic
authorization, URL credentials, and ``NAME=value`` / ``name: value`` /
``"name": "value"`` pairs whose name says secret (``.env`` lines, YAML,
JSON fields, ``--token value`` flags).

Whether a *name* says secret is decided on its words (split at ``_ . -`` and
camelCase): ``password``/``secret``/``credentials`` anywhere, ``token``,
``cookie``, ``auth`` or ``api key``-like pairs at the end, ``KEY`` at the end
of an upper-case env name, unless the last word says it is about the secret
rather than the secret itself (``_file``, ``_name``, ``_length``, …). So
``DB_PASSWORD`` and ``openai_api_key`` are secret; ``max_tokens``,
``token_type`` and ``password_file`` are not.
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
    re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    re.compile(r"ya29\.[0-9A-Za-z_\-]{20,}"),
    re.compile(r"glpat-[0-9A-Za-z_\-]{20,}"),
    re.compile(r"gsk_[A-Za-z0-9]{20,}"),
    re.compile(r"xai-[A-Za-z0-9]{20,}"),
    re.compile(r"r8_[A-Za-z0-9]{20,}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:)[^/\s@]{3,}(?=@)"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/\-]{12,}=*"),
    re.compile(r"(?i)((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:basic|digest|token|apikey|negotiate)\s+)"
               r"[A-Za-z0-9._~+/\-]+=*"),
    re.compile(r"(?i)(--[a-z0-9-]*(?:token|password|passwd|secret|api-key|apikey)\s+)(?!-)[^\s\"']+"),
    re.compile(r"(?i)((?:x-api-key|api[_-]?key|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{8,}"),
)


_SECRET_FIELD_NAMES = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "api_key", "apikey",
    "password", "secret", "token", "access_token", "refresh_token", "id_token", "cookie",
    "set-cookie", "x-goog-api-key",
})


# A name=value / name: value pair; only names holding a marker word are looked at closely.
_PAIR = re.compile(
    r"""(?P<lead>(?P<nq>["']?)\b(?P<name>[A-Za-z_][\w.\-]*)(?P=nq)\s*(?::=|=|:)[ \t]*)"""
    r"""(?:"(?P<dq>[^"\n]+)"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s"'`,;&|)}\]]+))""")
_MARKER = re.compile(r"pass|pwd|secret|token|credential|key|auth|cookie", re.IGNORECASE)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SECRET_ANYWHERE = frozenset({"password", "passwd", "secret", "credential", "credentials", "apikey"})
_SECRET_LAST = frozenset({"token", "pwd", "cookie", "auth", "passphrase"})
_KEY_KINDS = frozenset({"api", "access", "secret", "private", "account", "encryption", "master", "signing",
                        "client", "license", "service"})
_NOT_THE_SECRET = frozenset({
    "name", "names", "file", "path", "dir", "id", "ids", "arn", "ref", "type", "length", "len", "count",
    "version", "policy", "prompt", "hint", "url", "env", "var", "field", "header", "required", "enabled",
    "set", "source", "manager", "expiry", "expires", "ttl", "format", "min", "max", "limit", "scope", "scopes",
})
_NOT_VALUES = frozenset({"true", "false", "null", "none", "nil", "undefined", "***", "*", "''", '""'})


def _words(name: str) -> list[str]:
    return [w.lower() for part in re.split(r"[_.\-]+", name) for w in _WORDS.findall(part)]


def is_secret_field_name(name: str) -> bool:
    """True when a field or variable *named* ``name`` holds a secret value (see the module docstring)."""
    words = _words(name)
    if not words or words[-1] in _NOT_THE_SECRET:
        return False
    if any(w in _SECRET_ANYWHERE for w in words) or words[-1] in _SECRET_LAST:
        return True
    if words[-1] == "key":
        return (len(words) > 1 and (words[-2] in _KEY_KINDS or (name.isupper() and "_" in name)))
    return False


def _mask_pair(match: re.Match[str]) -> str:
    name = match.group("name")
    if not _MARKER.search(name):
        return match.group(0)
    value = match.group("dq") or match.group("sq") or match.group("bare") or ""
    if value.lower() in _NOT_VALUES or MASK in value or not is_secret_field_name(name):
        return match.group(0)
    quote = '"' if match.group("dq") else "'" if match.group("sq") else ""
    return f"{match.group('lead')}{quote}{MASK}{quote}"


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
    return _PAIR.sub(_mask_pair, text)


def _is_secret_field(key: str) -> bool:
    """A JSON field whose string value is a secret: a header/credential field or an env-style name."""
    if key.lower() in _SECRET_FIELD_NAMES or is_secret_field_name(key):
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
