"""``--context-root``: a monorepo task's build context, with its Dockerfile's ``COPY`` sources staged in it.

A task written inside a repository may build with the repository root as its context
(``COPY packages/claw-gmail /opt/claw-gmail``) while bench builds from the task's ``environment/``.
Staging copies ``environment/`` to a folder of its own, copies each ``COPY`` source found under the root
into its ``_deps/`` and points the ``COPY`` there, in the copy's Dockerfile only; the task folder is never
touched. A source is staged when it is relative, names no variable or glob, resolves inside the root and is
not a symbolic link; otherwise it is left as written (a source of ``environment/`` itself still builds).
``COPY --from`` copies from another stage or image and is left alone.

The staged folder is named after a hash of what it holds, so a changed source under the root gives a new
folder and a new image, and an unchanged one reuses both.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import ConfigError
from benchflow.sandbox import dockerfile_lines

DEPS = "_deps"
IGNORED = {".venv", "__pycache__", ".pytest_cache", "node_modules", ".git", ".mypy_cache", ".ruff_cache"}
_FRONT_NAMES = {"data", "config", "src", "lib", "skills", "environment"}


@dataclass(frozen=True)
class Staged:
    folder: Path
    """The build context to use in place of the task's ``environment/``."""
    digest: str
    """sha256 of the staged sources and the rewritten Dockerfile (``sha256:<hex>``)."""
    sources: tuple[str, ...]
    """The ``COPY`` sources that were staged from the root, as written."""


def _local_name(source: str) -> str:
    """``packages/environments/claw-gmail`` -> ``claw-gmail``; ``tasks/x/data`` -> ``x__data``."""
    parts = Path(source.rstrip("/")).parts
    if len(parts) > 1 and parts[-1] in _FRONT_NAMES:
        return f"{parts[-2]}__{parts[-1]}"
    return parts[-1]


def _under_root(source: str, root: Path) -> Path | None:
    if source.startswith(("/", "$", "<<")) or source in (".", "./") or any(c in source for c in "*?[$"):
        return None
    path = root / source
    if path.is_symlink() or not (path.is_dir() or path.is_file()):
        return None
    resolved = path.resolve()
    return resolved if resolved.is_relative_to(root) else None


def _copy_sources(text: str) -> tuple[list[str], bool] | None:
    """(the sources of a ``COPY`` whose context files could come from the root, JSON form?) or None."""
    flags, rest = dockerfile_lines.Instruction([], 1, text).flags_and_command()
    if any(f.lower().startswith("--from") for f in flags):
        return None
    if rest.startswith("["):
        try:
            args = json.loads(rest)
        except ValueError:
            return None
        ok = isinstance(args, list) and len(args) >= 2 and all(isinstance(a, str) for a in args)
        return (args[:-1], True) if ok else None
    args = dockerfile_lines.words(rest)
    return (args[:-1], False) if len(args) >= 2 and "\\" not in rest and "'" not in rest and '"' not in rest \
        else None


def plan(environment_dir: Path, dockerfile: str, root: Path) -> tuple[str, dict[str, Path]]:
    """(the Dockerfile with staged ``COPY`` sources pointed into ``_deps/``, local name -> root path)."""
    root = root.resolve()
    out: list[str] = []
    staged: dict[str, Path] = {}
    text = (environment_dir / dockerfile).read_text(encoding="utf-8")
    for instruction in dockerfile_lines.parse(text):
        found = _copy_sources(instruction.text) if instruction.keyword == "COPY" and not instruction.heredocs \
            else None
        renamed: dict[str, str] = {}
        for source in found[0] if found else []:
            path = _under_root(source, root)
            if path is not None:
                name = _local_name(source)
                if staged.get(name, path) != path:
                    raise ConfigError(f"--context-root {root}: {environment_dir / dockerfile} copies two sources "
                                      f"named {name} ({staged[name]} and {path}); rename one of them")
                staged[name] = path
                renamed[source] = f"{DEPS}/{name}"
        if not renamed:
            out.extend(instruction.lines)
            continue
        flags, rest = instruction.flags_and_command()
        sources, json_form = found
        new = [renamed.get(s, s) for s in sources]
        dest = json.loads(rest)[-1] if json_form else dockerfile_lines.words(rest)[-1]
        args = json.dumps([*new, dest]) if json_form else " ".join([*new, dest])
        out.append(" ".join(["COPY", *flags, args]))
    return "\n".join(out) + "\n", staged


def _ignore(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n in IGNORED or os.path.islink(os.path.join(folder, n))}


def _digest(folder: Path) -> str:
    hasher = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        hasher.update(path.relative_to(folder).as_posix().encode() + b"\0")
        hasher.update(hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + hasher.hexdigest()


def stage(environment_dir: Path, dockerfile: str, root: Path, into: Path, name: str) -> Staged:
    """``environment_dir`` staged under ``into`` (``<name>-<hash>/``), reused when it is there already.

    Raises:
        ConfigError: two staged sources would share a name in ``_deps/``.
    """
    text, sources = plan(environment_dir, dockerfile, root)
    into.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=into))
    try:
        shutil.copytree(environment_dir, work, ignore=_ignore, dirs_exist_ok=True)
        for local, path in sources.items():
            target = work / DEPS / local
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir():
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(path, target, ignore=_ignore)
            else:
                shutil.copy2(path, target)
        (work / dockerfile).write_text(text, encoding="utf-8")
        digest = _digest(work)
        folder = into / f"{name}-{digest.removeprefix('sha256:')[:16]}"
        try:
            work.rename(folder)
        except OSError:  # staged before (this run or another process): the same content is there
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Staged(folder=folder, digest=digest, sources=tuple(sorted(sources)))
