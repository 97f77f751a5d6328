"""The layout of ``sandbox/``: one package per backend over the shared contract.

Checked with ``ast`` over the source: a backend subpackage never imports another
backend subpackage, nothing outside ``sandbox/`` names a backend subpackage in an
import (the registry reaches them through its ``module:attr`` strings, not imports),
the shared modules at ``sandbox/`` import no backend subpackage, and a module left at
``sandbox/`` with a backend's prefix (``docker_engine.py``, ``local_exec.py``) is there
because something besides that backend uses it.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "benchflow"
SANDBOX = SRC / "sandbox"
BACKEND_PACKAGES = sorted(p.name for p in SANDBOX.iterdir() if (p / "__init__.py").is_file())

# Modules outside sandbox/ allowed to import a backend subpackage: none yet.
ALLOWED_OUTSIDE: dict[str, str] = {}


def _imported(path: Path) -> set[str]:
    """The dotted modules ``path`` imports, relative imports resolved."""
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _backend_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["benchflow", "sandbox"] and len(parts) > 2 and parts[2] in BACKEND_PACKAGES:
        return parts[2]
    return None


def test_there_are_backend_packages():
    assert {"docker", "local", "daytona", "modal", "agentcore", "apple_container"} <= set(BACKEND_PACKAGES)


def test_no_backend_package_imports_another():
    crossings = []
    for name in BACKEND_PACKAGES:
        for path in sorted((SANDBOX / name).rglob("*.py")):
            for module in _imported(path):
                other = _backend_of(module)
                if other and other != name:
                    crossings.append(f"{path.relative_to(SRC)} imports {module}")
    assert not crossings, crossings


def test_nothing_outside_sandbox_imports_a_backend_package():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if SANDBOX in path.parents:
            continue
        rel = str(path.relative_to(SRC))
        for module in _imported(path):
            if _backend_of(module) and rel not in ALLOWED_OUTSIDE:
                found.append(f"{rel} imports {module}")
    assert not found, found


def test_no_shared_module_imports_a_backend_package():
    found = []
    for path in sorted(SANDBOX.glob("*.py")):
        for module in _imported(path):
            if _backend_of(module):
                found.append(f"{path.relative_to(SRC)} imports {module}")
    assert not found, found


def test_a_flat_module_with_a_backend_prefix_is_shared():
    """``sandbox/<backend>_x.py`` stays flat only while another backend, a shared module or code
    outside ``sandbox/`` imports it; used by its own backend alone it belongs in ``sandbox/<backend>/``."""
    importers: dict[str, set[Path]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for module in _imported(path):
            importers.setdefault(module, set()).add(path)
    only_own = []
    for name in BACKEND_PACKAGES:
        for path in sorted(SANDBOX.glob(f"{name}_*.py")):
            module = f"benchflow.sandbox.{path.stem}"
            users = {user for user in importers.get(module, set())
                     if SANDBOX / name not in user.parents and not user.name.startswith(f"{name}_")}
            if not users:
                only_own.append(str(path.relative_to(SRC)))
    assert not only_own, only_own
