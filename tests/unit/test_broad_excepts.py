"""Broad excepts only where a boundary must survive anything, each saying why (issue #33).

Every ``except Exception`` / ``except BaseException`` / bare ``except`` in ``src/benchflow`` either
raises (the same exception after cleanup, or one of ours translated from a library's at its
boundary) or says on its line what it catches and why (``# noqa: BLE001 - ...`` or a comment)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "benchflow"
BROAD = {"Exception", "BaseException"}


def _broad(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in BROAD for n in names)


def test_every_broad_except_raises_or_says_why():
    silent = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ExceptHandler) and _broad(node):
                raises = any(isinstance(n, ast.Raise) for n in ast.walk(node))
                if not raises and "#" not in lines[node.lineno - 1]:
                    silent.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert silent == []
