"""The import rules docs/ARCHITECTURE.md states, checked over src/benchflow's ast (imports inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "benchflow"


def _imported_packages(package: str) -> dict[str, set[str]]:
    """For each module of ``benchflow.<package>``: the top-level ``benchflow`` packages it imports."""
    found: dict[str, set[str]] = {}
    for path in sorted((SRC / package).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        module = ("benchflow", *parts)
        if parts[-1] == "__init__":
            module = module[:-1]
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name.split(".") for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = list(module[: len(module) - node.level + (parts[-1] == "__init__")]) if node.level else []
                targets = [[*base, *(node.module or "").split(".")]] if node.module else [base]
            else:
                continue
            names.update(t[1] for t in targets if len(t) > 1 and t[0] == "benchflow")
        found[".".join(parts)] = names
    return found


def test_tasks_imports_only_errors_and_util():
    allowed = {"tasks", "errors", "util"}
    wrong = {module: sorted(names - allowed) for module, names in _imported_packages("tasks").items()
             if names - allowed}
    assert wrong == {}


def test_adopt_imports_only_tasks_errors_util_and_the_run_api_and_only_the_cli_imports_it():
    allowed = {"adopt", "tasks", "errors", "util", "jobs", "sandbox"}  # jobs, sandbox: the sandboxed conversion
    wrong = {module: sorted(names - allowed) for module, names in _imported_packages("adopt").items()
             if names - allowed}
    assert wrong == {}
    users = {package.name for package in SRC.iterdir() if package.is_dir() and package.name not in ("adopt", "cli")
             and any("adopt" in names for names in _imported_packages(package.name).values())}
    assert users == set()


def _feature_packages() -> set[str]:
    from benchflow.jobs.extensions import FEATURES

    return {row.target.split(":")[0].split(".")[1] for row in FEATURES}


def test_the_engine_imports_none_of_its_features():
    features = _feature_packages()
    assert {"skills", "branch", "executors", "review", "steps", "scenes", "sim_user", "separate_verifier",
            "shards"} <= features
    wrong = {module: sorted(names & features) for module, names in _imported_packages("jobs").items()
             if names & features}
    assert wrong == {}


def test_nothing_the_engine_stands_on_imports_the_engine():
    below = set().union(*_imported_packages("jobs").values()) - {"jobs"}
    wrong = {package: sorted(module for module, names in _imported_packages(package).items() if "jobs" in names)
             for package in sorted(below) if (SRC / package).is_dir()}
    assert {package: modules for package, modules in wrong.items() if modules} == {}


def test_no_two_packages_import_each_other():
    imports = {package.name: set().union(*_imported_packages(package.name).values()) - {package.name}
               for package in SRC.iterdir() if package.is_dir() and (package / "__init__.py").is_file()}
    both = sorted((a, b) for a in imports for b in imports[a] if a < b and a in imports.get(b, set()))
    assert both == []
