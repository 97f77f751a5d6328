"""The Dockerfile subset the ``local`` sandbox honours, parsed into an image plan.

The local sandbox has no image: the host root stands in for ``FROM``. What it
can reproduce is ``WORKDIR``, ``ENV``/``ARG``, ``USER``, ``SHELL``, ``COPY``/
``ADD`` of files from the build context, and ``RUN`` (executed later in a
copy-on-write layer over the host root). Heredocs (BuildKit syntax) are
honoured as BuildKit does (:mod:`benchflow.sandbox.dockerfile_heredoc`): a
``RUN``'s shell gets the script with the bodies, a ``COPY <<EOF`` writes a file.
Anything else that changes the image (``ADD`` of a URL, ``COPY --from``, a
second ``FROM``, ``RUN --mount``, ``spec.image``) is refused here, before
anything runs, with a :class:`~benchflow.errors.CapabilityError` that names the step.

Parsing is pure: no file is read but the text handed in.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shlex
from dataclasses import asdict, dataclass, field

from benchflow.errors import CapabilityError
from benchflow.sandbox import dockerfile_heredoc, dockerfile_lines
from benchflow.sandbox.dockerfile_lines import substitute

log = logging.getLogger(__name__)

DEFAULT_SHELL = ("/bin/sh", "-c")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SUGGESTION = "use --sandbox docker"

# Instructions that describe how a container is run, not what is in it.
_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "MAINTAINER", "STOPSIGNAL",
            "HEALTHCHECK", "VOLUME", "ONBUILD"}


@dataclass(frozen=True)
class CopyStep:
    """``COPY``/``ADD`` of build-context files to ``dest`` (absolute)."""

    sources: tuple[str, ...]
    dest: str
    dest_is_dir: bool
    chown: str | None = None
    chmod: int | None = None
    extract: bool = False
    """``ADD`` semantics: a local tar archive is unpacked at ``dest``."""
    line: int = 0


@dataclass(frozen=True)
class WriteStep:
    """``COPY``/``ADD <<EOF dest``: files named after their terminators, a heredoc's text their content."""

    files: tuple[tuple[str, str], ...]
    """(name, content) of each file."""
    dest: str
    dest_is_dir: bool
    chown: str | None = None
    chmod: int | None = None
    line: int = 0


@dataclass(frozen=True)
class RunStep:
    """A ``RUN`` (argv already wrapped in the shell when in shell form)."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    workdir: str
    user: str | None
    network: str | None = None
    line: int = 0


@dataclass(frozen=True)
class MkdirStep:
    """A ``WORKDIR`` creates its folder, as Docker does."""

    path: str
    line: int = 0


Step = CopyStep | WriteStep | RunStep | MkdirStep


@dataclass
class ImagePlan:
    """What the Dockerfile asks for, in the subset the local sandbox can honour."""

    base: str = ""
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    user: str | None = None
    shell: tuple[str, ...] = DEFAULT_SHELL
    steps: list[Step] = field(default_factory=list)

    def digest(self) -> str:
        """Stable digest of the plan (part of the layer cache key)."""
        body = json.dumps({"base": self.base, "env": self.env, "workdir": self.workdir,
                           "user": self.user, "steps": [[type(s).__name__, asdict(s)] for s in self.steps]},
                          sort_keys=True, default=list)
        return hashlib.sha256(body.encode()).hexdigest()

    @property
    def has_layer_steps(self) -> bool:
        return any(isinstance(s, (CopyStep, WriteStep, RunStep)) for s in self.steps)


@dataclass(frozen=True)
class _Instruction:
    keyword: str
    args: str
    line: int
    text: str
    source: dockerfile_lines.Instruction
    """As BuildKit reads it, heredoc bodies included."""


def refuse(path: str, line: int, text: str, reason: str) -> CapabilityError:
    """The one message shape for a step the local sandbox cannot honour."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    where = f"{path}:{line}" if line else path
    return CapabilityError(f"{where}: `{shown}` cannot run in the local sandbox ({reason}); {SUGGESTION}")


def _logical_lines(text: str) -> list[_Instruction]:
    """The instructions of ``text`` (grouped as BuildKit groups them: :mod:`.dockerfile_lines`), each
    continuation line stripped and joined with a space, comment lines among them dropped."""
    escape = dockerfile_lines.escape_char(text)
    out: list[_Instruction] = []
    for source in dockerfile_lines.parse(text):
        if not source.text:
            continue
        buf = []
        for raw in source.lines[:source.head]:
            stripped = raw.strip()
            if stripped.startswith("#"):
                continue
            buf.append(stripped[: -len(escape)] if stripped.endswith(escape) else stripped)
        joined = " ".join(part for part in buf if part)
        keyword, _, args = joined.partition(" ")
        out.append(_Instruction(keyword.upper(), args.strip(), source.line, joined, source))
    return out


def _flags(args: str) -> tuple[dict[str, str], str]:
    flags: dict[str, str] = {}
    while args.startswith("--"):
        word, _, rest = args.partition(" ")
        name, _, value = word[2:].partition("=")
        flags[name] = value
        args = rest.lstrip()
    return flags, args


def _json_array(args: str) -> list[str] | None:
    if not args.startswith("["):
        return None
    try:
        value = json.loads(args)
    except json.JSONDecodeError:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _abs(path: str, workdir: str) -> str:
    joined = path if path.startswith("/") else f"{workdir.rstrip('/')}/{path}"
    parts: list[str] = []
    for part in joined.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def parse_dockerfile(text: str, *, path: str = "environment/Dockerfile",
                     build_args: dict[str, str] | None = None,
                     base_image_override: str | None = None) -> ImagePlan:
    """Parse ``text`` into an :class:`ImagePlan`.

    Raises:
        CapabilityError: a step the local sandbox cannot honour (names the step).
    """
    plan = ImagePlan()
    args: dict[str, str] = dict(build_args or {})
    seen_from = False
    for ins in _logical_lines(text):
        kw, rest = ins.keyword, ins.args
        variables = {**args, **plan.env}
        if kw == "FROM":
            if seen_from:
                raise refuse(path, ins.line, ins.text, "multi-stage builds need an image builder")
            seen_from = True
            flags, rest = _flags(rest)
            plan.base = base_image_override or substitute(rest.split()[0] if rest else "", variables)
            continue
        if not seen_from and kw != "ARG":
            raise refuse(path, ins.line, ins.text, "an instruction before FROM")
        if kw in _IGNORED:
            log.debug("%s:%d: %s has no effect in the local sandbox", path, ins.line, kw)
            continue
        if kw == "ARG":
            for word in shlex.split(rest):
                name, eq, default = word.partition("=")
                if name not in args:  # a --build-arg wins over the default
                    args[name] = substitute(default, variables) if eq else ""
            continue
        if kw == "ENV":
            plan.env.update(_parse_env(rest, variables, path, ins))
            continue
        if kw == "WORKDIR":
            plan.workdir = _abs(substitute(rest, variables), plan.workdir)
            plan.steps.append(MkdirStep(plan.workdir, ins.line))
            continue
        if kw == "USER":
            user = substitute(rest, variables).split(":")[0].strip()
            plan.user = None if user in ("", "root", "0") else user
            continue
        if kw == "SHELL":
            shell = _json_array(rest)
            if not shell:
                raise refuse(path, ins.line, ins.text, "SHELL needs a JSON array")
            plan.shell = tuple(shell)
            continue
        if kw == "RUN":
            plan.steps.append(_parse_run(rest, plan, variables, path, ins))
            continue
        if kw in ("COPY", "ADD"):
            plan.steps.extend(_parse_copy(kw, rest, plan, variables, path, ins))
            continue
        raise refuse(path, ins.line, ins.text, f"unknown instruction {kw}")
    if not seen_from:
        raise refuse(path, 0, "(no FROM)", "a Dockerfile needs a FROM line")
    return plan


def _parse_env(rest: str, variables: dict[str, str], path: str, ins: _Instruction) -> dict[str, str]:
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise refuse(path, ins.line, ins.text, f"ENV does not parse: {exc}") from None
    if words and "=" not in words[0]:  # legacy form: ENV key value with spaces
        key, _, value = rest.partition(" ")
        return {key: substitute(value.strip(), variables)}
    out: dict[str, str] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            raise refuse(path, ins.line, ins.text, f"ENV word {word!r} has no '='")
        out[key] = substitute(value, {**variables, **out})
    return out


def _parse_run(rest: str, plan: ImagePlan, variables: dict[str, str], path: str, ins: _Instruction) -> RunStep:
    flags, rest = _flags(rest)
    if "mount" in flags or "security" in flags:
        raise refuse(path, ins.line, ins.text, "RUN --mount/--security need BuildKit")
    argv = _json_array(rest)
    if argv is None and ins.source.heredocs:
        for doc in ins.source.heredocs:
            dockerfile_heredoc.check_terminated(ins.source, doc)
        argv = [*plan.shell, dockerfile_heredoc.run_script(ins.source)]
    elif argv is None:
        argv = [*plan.shell, rest]
    if not argv:
        raise refuse(path, ins.line, ins.text, "RUN with nothing to run")
    env = {"PATH": DEFAULT_PATH, **{k: v for k, v in variables.items() if k not in plan.env}, **plan.env}
    return RunStep(tuple(argv), tuple(sorted(env.items())), plan.workdir, plan.user,
                   flags.get("network") or None, ins.line)


def _parse_copy(kw: str, rest: str, plan: ImagePlan, variables: dict[str, str], path: str,
                ins: _Instruction) -> list[CopyStep | WriteStep]:
    """A ``CopyStep`` for the build-context sources, a ``WriteStep`` for the heredocs (either may be absent)."""
    flags, rest = _flags(rest)
    if "from" in flags:
        raise refuse(path, ins.line, ins.text, f"{kw} --from needs another image")
    unknown = set(flags) - {"chown", "chmod", "link"}
    if unknown:
        raise refuse(path, ins.line, ins.text, f"{kw} --{sorted(unknown)[0]} is not supported")
    inline = dockerfile_heredoc.copy_files(ins.source, variables) if ins.source.heredocs else {}
    if inline:
        rest = " ".join(word for word, doc in dockerfile_lines.heredoc_words(rest) if doc is None)
    words = _json_array(rest)
    if words is None:
        try:
            words = shlex.split(rest)
        except ValueError as exc:
            raise refuse(path, ins.line, ins.text, f"{kw} does not parse: {exc}") from None
    words = [substitute(w, variables) for w in words]
    if len(words) + len(inline) < 2:
        raise refuse(path, ins.line, ins.text, f"{kw} needs a source and a destination")
    *sources, dest = words
    for src in sources:
        if re.match(r"^[a-z][a-z0-9+.-]*://", src, re.I) or src.startswith("git@"):
            raise refuse(path, ins.line, ins.text, f"{kw} of a URL needs network access at build time")
        if src.startswith("/") or _abs(src, "/ctx").split("/")[1] != "ctx":
            raise refuse(path, ins.line, ins.text, f"{kw} source {src!r} is outside the build context")
    chmod = None
    if flags.get("chmod"):
        try:
            chmod = int(flags["chmod"], 8)
        except ValueError:
            raise refuse(path, ins.line, ins.text, "--chmod must be octal") from None
    many = len(sources) + len(inline) > 1
    dest_is_dir = dest.endswith("/") or many or any(any(c in s for c in "*?[") for s in sources)
    chown = substitute(flags["chown"], variables) if flags.get("chown") else None
    steps: list[CopyStep | WriteStep] = []
    if sources:
        steps.append(CopyStep(tuple(sources), _abs(dest, plan.workdir), dest_is_dir, chown, chmod, kw == "ADD",
                              ins.line))
    if inline:
        files = tuple((name, content) for name, (content, _) in inline.items())
        steps.append(WriteStep(files, _abs(dest, plan.workdir), dest_is_dir, chown, chmod, ins.line))
    return steps
