"""Variants of an oracle's output for the equivalence battery (pure; no sandbox here).

The oracle's *outputs* are the workspace files it created or changed, found
by comparing its frozen workspace with the untouched one (the nop agent's).
Every variant rewrites all outputs it applies to at once, so a verifier that
reads only one of several files is still put to the test:

* wrong variants (a correct verifier scores them below 1): ``emptied``,
  ``truncated`` (the first half of the content, trailing whitespace dropped
  first so the cut always removes real content) and ``garbage``;
* value-equivalent variants (a robust verifier still scores 1.0):
  ``trailing-newline`` (removed when present, added when absent),
  ``trailing-whitespace`` (spaces after the last non-blank character),
  ``line-endings`` (LF -> CRLF, or CRLF -> LF) and ``json-reformatted``
  (other indentation and reversed key order, same values).

Equivalent variants touch only UTF-8 text files; a variant that would change
no file is not graded (``skipped`` says why).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

GARBAGE = b"\x00benchflow equivalence battery: this is not the answer \xff\xfe\n"


@dataclass
class Variant:
    name: str
    kind: Literal["wrong", "equivalent"]
    description: str
    changes: dict[str, bytes] = field(default_factory=dict)
    """Relative path -> new content, for the output files this variant rewrites."""


def read_tree(root: Path) -> dict[str, bytes]:
    """Relative POSIX path -> bytes of every regular file under ``root`` (symlinks skipped)."""
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def output_files(reference: dict[str, bytes], baseline: dict[str, bytes]) -> list[str]:
    """Files of the oracle's workspace that the untouched workspace lacks or holds differently."""
    return sorted(path for path, data in reference.items() if baseline.get(path) != data)


def _text(data: bytes) -> str | None:
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _truncate(data: bytes) -> bytes | None:
    core = data.rstrip()
    return core[: len(core) // 2] if core else None


def _toggle_newline(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    if text.endswith("\n"):
        return text[:-1]
    return text + ("\r\n" if "\r\n" in text else "\n")


def _trailing_spaces(text: str) -> str | None:
    core = text.rstrip()
    return core + "  " + text[len(core):] if core else None


def _line_endings(text: str) -> str | None:
    if "\r\n" in text:
        return text.replace("\r\n", "\n")
    return text.replace("\n", "\r\n") if "\n" in text else None


def _reverse_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reverse_keys(v) for v in value]
    return value


def _json_reformat(text: str) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, (dict, list)):
        return None
    reordered = _reverse_keys(value)
    if "\n" in text.strip():
        body = json.dumps(reordered, ensure_ascii=False, separators=(",", ":"))
    else:
        body = json.dumps(reordered, ensure_ascii=False, indent=3)
    return body + text[len(text.rstrip()):]


def _bytewise(name: str, description: str, change: Callable[[bytes], bytes | None],
              outputs: dict[str, bytes]) -> Variant:
    variant = Variant(name, "wrong", description)
    for path, data in outputs.items():
        new = change(data)
        if new is not None and new != data:
            variant.changes[path] = new
    return variant


def _textwise(name: str, description: str, change: Callable[[str], str | None],
              outputs: dict[str, bytes]) -> Variant:
    variant = Variant(name, "equivalent", description)
    for path, data in outputs.items():
        text = _text(data)
        new = change(text) if text is not None else None
        if new is not None and new.encode("utf-8") != data:
            variant.changes[path] = new.encode("utf-8")
    return variant


def make_variants(outputs: dict[str, bytes]) -> tuple[list[Variant], list[dict[str, str]]]:
    """The variants of ``outputs`` (path -> oracle content): (applicable ones, skipped ones with why)."""
    candidates = [
        _bytewise("emptied", "every output file emptied", lambda _d: b"", outputs),
        _bytewise("truncated", "every output file cut to the first half of its content", _truncate, outputs),
        _bytewise("garbage", "every output file replaced by garbage bytes", lambda _d: GARBAGE, outputs),
        _textwise("trailing-newline", "final newline removed, or added where missing",
                  _toggle_newline, outputs),
        _textwise("trailing-whitespace", "spaces added after the last non-blank character",
                  _trailing_spaces, outputs),
        _textwise("line-endings", "LF line endings turned into CRLF (CRLF into LF)", _line_endings, outputs),
        _textwise("json-reformatted", "JSON re-serialized with other whitespace and reversed key order",
                  _json_reformat, outputs),
    ]
    applicable = [v for v in candidates if v.changes]
    skipped = [{"variant": v.name, "kind": v.kind,
                "reason": "no output file it applies to" if outputs else "the oracle changed no workspace file"}
               for v in candidates if not v.changes]
    return applicable, skipped
