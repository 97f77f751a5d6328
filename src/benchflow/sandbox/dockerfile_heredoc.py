"""Dockerfile heredocs (BuildKit syntax) made runnable by builders that have none.

Harbor builds task images with BuildKit, so published tasks write ``RUN <<EOF`` … ``EOF``,
``RUN python3 - <<'PY'`` … ``PY`` and ``COPY <<EOF /path``. The Docker backend builds with the
engine's classic builder (the Docker SDK; no buildx here) and the local backend runs the
Dockerfile itself; both get from here what BuildKit would do (``dockerfile2llb``'s ``dispatchRun``
and ``dispatchCopy``):

- ``RUN`` whose command is one heredoc: the body (``<<-``: less its leading tabs) is the script
  of the instruction's shell (``SHELL``, default ``/bin/sh -c``); a body starting with ``#!`` is
  written to a file (mode 0755) that the shell runs instead.
- ``RUN`` with a command and heredocs (``python3 - <<'PY'``, ``cat > f <<'X'``): the command
  line, then each body and its terminator, is the shell's script, so the shell does the
  redirection (a quoted terminator: no expansion; ``<<-``: tabs stripped).
- ``COPY``/``ADD <<EOF dest``: a file named after the terminator, the body (``<<-``: less its
  leading tabs; an unquoted terminator: the build's variables expanded) as its content, mode 0644
  unless ``--chmod``, owned by root unless ``--chown``, copied to ``dest`` like any source.

For the classic builder (:func:`for_classic_builder`) a heredoc ``RUN`` becomes one ``RUN`` line
that decodes a base64 copy of the script and ``eval``\\s it in the instruction's own shell: the
same script, options (``-o pipefail``) and stdin as BuildKit's ``[*SHELL, script]`` (dash and bash
run ``-c`` strings and ``eval`` through the same parser); the script is passed as one argument, so
it stays under Linux's 128 KiB per argument, as BuildKit's does. A heredoc ``COPY`` copies a file
that bench puts into the build context under :data:`CONTEXT_DIR`, its mode set there (the classic
builder has no ``--chmod``). The local backend runs ``[*SHELL, run_script(...)]`` and writes
the ``COPY`` files itself.
"""

from __future__ import annotations

import base64
import re
import shlex
from dataclasses import dataclass

from benchflow.errors import BuildError

from .dockerfile_lines import (
    Heredoc,
    Instruction,
    escape_char,
    heredoc_of,
    heredoc_words,
    parse,
    referenced,
    substitute,
)

CONTEXT_DIR = ".benchflow-heredocs"
"""Where the bodies of heredoc ``COPY``/``ADD`` sources go in the classic builder's context."""
CHUNK = 4000
"""Characters of base64 per Dockerfile line (the parser reads lines of at most 64 KiB)."""
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", re.IGNORECASE)


@dataclass(frozen=True)
class ContextFile:
    """A file :func:`for_classic_builder` adds to the build context."""

    path: str
    data: bytes
    mode: int


def run_script(ins: Instruction) -> str:
    """The script BuildKit hands the instruction's shell for a ``RUN`` with heredocs."""
    _, command = ins.flags_and_command()
    if heredoc_of(command) is not None and len(ins.heredocs) == 1:  # the command is one heredoc word
        doc = ins.heredocs[0]
        return _run_file(doc) if doc.body.startswith("#!") else doc.content
    return command + "".join(f"\n{doc.body}{doc.name}" for doc in ins.heredocs)


def _run_file(doc: Heredoc) -> str:
    """A script that writes ``doc`` to an executable file, runs it, removes it and exits with its status
    (BuildKit mounts the file at ``/dev/pipes/<name>`` and has the shell run that path)."""
    name = doc.name if _SAFE_NAME.fullmatch(doc.name) and doc.name not in (".", "..") else "heredoc"
    payload = base64.b64encode(doc.content.encode()).decode()
    return (f'__bf_dir=$(mktemp -d) || exit\n'
            f'printf %s {payload} | base64 -d > "$__bf_dir/{name}" && chmod 755 "$__bf_dir/{name}" || exit\n'
            f'__bf_rc=0; "$__bf_dir/{name}" || __bf_rc=$?; rm -rf "$__bf_dir"; exit $__bf_rc\n')


def classic_run(ins: Instruction, escape: str = "\\") -> list[str]:
    """One ``RUN`` (its lines continued with ``escape``) that makes the shell ``eval`` :func:`run_script`."""
    flags, _ = ins.flags_and_command()
    payload = base64.b64encode(run_script(ins).encode()).decode()
    chunks = [payload[i:i + CHUNK] for i in range(0, len(payload), CHUNK)] or [""]
    head = "RUN " + "".join(f"{flag} " for flag in flags) + "__bf_script=$(printf %s "
    tail = ' | base64 -d && echo .) || exit; eval "unset __bf_script; ${__bf_script%.}"'
    chunks[0] = head + chunks[0]
    return [chunk + escape for chunk in chunks[:-1]] + [chunks[-1] + tail]


def copy_files(ins: Instruction, variables: dict[str, str]) -> dict[str, tuple[str, int | None]]:
    """Each heredoc source of a ``COPY``/``ADD``: its file name -> (content, ``--chmod`` mode or None).

    ``variables`` (the build's ARG and ENV values) expand the body of a heredoc whose terminator is unquoted.

    Raises:
        BuildError: a terminator that cannot be a file name, a bad ``--chmod``, an unterminated heredoc.
    """
    flags, _ = ins.flags_and_command()
    chmod = next((flag.split("=", 1)[1] for flag in flags if flag.startswith("--chmod=")), None)
    try:
        mode = int(chmod, 8) if chmod else None
    except ValueError:
        raise BuildError(f"Dockerfile line {ins.line}: --chmod={chmod} is not an octal mode") from None
    out: dict[str, tuple[str, int | None]] = {}
    for doc in ins.heredocs:
        check_terminated(ins, doc)
        if not _SAFE_NAME.fullmatch(doc.name) or doc.name in (".", ".."):
            raise BuildError(f"Dockerfile line {ins.line}: {ins.keyword} <<{doc.name} names no file bench can write; "
                             "use a terminator of letters, digits, '.', '_' or '-'")
        content = doc.content
        if doc.expand:
            content = substitute(content, variables)
        out[doc.name] = (content, mode)
    return out


def check_terminated(ins: Instruction, doc: Heredoc) -> None:
    """Raises:
        BuildError: ``doc`` runs to the end of the Dockerfile (BuildKit refuses it too).
    """
    if not doc.terminated:
        raise BuildError(f"Dockerfile line {ins.line}: heredoc <<{doc.name} has no terminator line {doc.name!r}; "
                         "add it after the body")


def for_classic_builder(dockerfile: str) -> tuple[str, list[ContextFile]]:
    """``dockerfile`` without heredocs, and the files its ``COPY``/``ADD`` lines now take from the context.

    Raises:
        BuildError: a heredoc bench cannot translate (the message names the line and the fix).
    """
    parsed = parse(dockerfile)
    if not any(ins.heredocs for ins in parsed):
        return dockerfile, []
    escape = escape_char(dockerfile)
    scope = _Variables()
    out: list[str] = []
    files: list[ContextFile] = []
    for ins in parsed:
        scope.see(ins)
        if not ins.heredocs:
            out.extend(ins.lines)
        elif ins.keyword == "RUN":
            for doc in ins.heredocs:
                check_terminated(ins, doc)
            out.extend(classic_run(ins, escape))
        else:
            line, added = _classic_copy(ins, scope, len(files))
            out.append(line)
            files.extend(added)
    return "\n".join(out) + "\n", files


def _classic_copy(ins: Instruction, scope: _Variables, index: int) -> tuple[str, list[ContextFile]]:
    flags, command = ins.flags_and_command()
    for doc in ins.heredocs:
        unknown = sorted(name for name in referenced(doc.content) if name not in scope.values) if doc.expand else []
        if unknown:
            raise BuildError(f"Dockerfile line {ins.line}: {ins.keyword} <<{doc.name} expands ${unknown[0]}, which "
                             f"the Dockerfile does not set (ARG/ENV), so bench cannot expand it before the build; "
                             f"quote the terminator (<<'{doc.name}') if the text is meant as written")
    contents = copy_files(ins, scope.values)
    added: list[ContextFile] = []
    sources: list[str] = []
    for word, doc in heredoc_words(command):
        if doc is None:
            sources.append(word)
            continue
        content, mode = contents[doc.name]
        path = f"{CONTEXT_DIR}/{index + len(added)}/{doc.name}"
        added.append(ContextFile(path, content.encode(), 0o644 if mode is None else mode))
        sources.append(path)
    kept = [flag for flag in flags if not flag.startswith(("--chmod=", "--link"))]
    return " ".join([ins.keyword, *kept, *sources]), added


class _Variables:
    """ARG defaults and ENV values a stage has declared so far (``FROM <stage>`` inherits that stage's)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self._global: dict[str, str] = {}
        self._stages: dict[str, dict[str, str]] = {}
        self._in_stage = False

    def see(self, ins: Instruction) -> None:
        keyword, (_, rest) = ins.keyword, ins.flags_and_command()
        if keyword == "FROM":
            match = _FROM.match(ins.text)
            base = match.group(1).lower() if match else ""
            self.values = dict(self._stages.get(base, {}))
            if match and match.group(2):
                self._stages[match.group(2).lower()] = self.values
            self._in_stage = True
            return
        if keyword not in ("ARG", "ENV"):
            return
        try:
            parts = shlex.split(rest)
        except ValueError:
            return
        if keyword == "ENV" and parts and "=" not in parts[0]:
            parts = [f"{parts[0]}={rest.partition(' ')[2].strip()}"]
        target = self.values if self._in_stage else self._global
        for part in parts:
            name, eq, value = part.partition("=")
            if eq:
                target[name] = substitute(value, self.values)
            elif keyword == "ARG":  # declared without a default: the global one's, else empty
                target[name] = self._global.get(name, "")
