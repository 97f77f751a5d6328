"""The Dockerfile subset the ``local`` sandbox honours, parsed into an image plan.

The local sandbox has no image: the host root stands in for ``FROM``. What it
can reproduce is ``WORKDIR``, ``ENV``/``ARG``, ``USER``, ``SHELL``, ``COPY``/
``ADD`` of files from the build context, and ``RUN`` (executed later in a
copy-on-write layer over the host root). Anything else that changes the image
(``ADD`` of a URL, ``COPY --from``, a second ``FROM``, ``RUN --mount``,
heredocs, ``spec.image``) is refused here, before anything runs, with a
:class:`~benchflow.errors.CapabilityError` that names the step.

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

log = logging.getLogger(__name__)

DEFAULT_SHELL = ("/bin/sh", "-c")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SUGGESTION = "use --sandbox docker"

# Instructions that describe how a container is run, not what is in it.
_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "MAINTAINER", "STOPSIGNAL",
            "HEALTHCHECK", "VOLUME", "ONBUILD"}
_VAR = re.compile(r"\\\$|\$\{(\w+)(?::([-+])([^}]*))?\}|\$(\w+)")
_HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*[\"']?[A-Za-z_]\w*")


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


Step = CopyStep | RunStep | MkdirStep


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
        return any(isinstance(s, (CopyStep, RunStep)) for s in self.steps)


@dataclass(frozen=True)
class _Instruction:
    keyword: str
    args: str
    line: int
    text: str


def refuse(path: str, line: int, text: str, reason: str) -> CapabilityError:
    """The one message shape for a step the local sandbox cannot honour."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    where = f"{path}:{line}" if line else path
    return CapabilityError(f"{where}: `{shown}` cannot run in the local sandbox ({reason}); {SUGGESTION}")


def substitute(text: str, variables: dict[str, str]) -> str:
    """Expand ``$VAR``, ``${VAR}``, ``${VAR:-default}`` and ``${VAR:+alt}`` like Docker does."""

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "\\$":
            return "$"
        name = m.group(1) or m.group(4)
        value = variables.get(name, "")
        if m.group(2) == "-":
            return value or m.group(3)
        if m.group(2) == "+":
            return m.group(3) if value else ""
        return value

    return _VAR.sub(repl, text)


def _logical_lines(text: str) -> list[_Instruction]:
    escape = "\\"
    lines = text.splitlines()
    for raw in lines:  # parser directives come first, before any other line
        m = re.match(r"#\s*(\w+)\s*=\s*(\S+)\s*$", raw)
        if not m:
            break
        if m.group(1).lower() == "escape":
            escape = m.group(2)
    out: list[_Instruction] = []
    buf: list[str] = []
    start = 0
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # comment lines inside a continuation are dropped
        if not buf:
            start = number
        if stripped.endswith(escape):
            buf.append(stripped[: -len(escape)])
            continue
        buf.append(stripped)
        joined = " ".join(part for part in buf if part)
        buf = []
        keyword, _, args = joined.partition(" ")
        out.append(_Instruction(keyword.upper(), args.strip(), start, joined))
    if buf:
        joined = " ".join(buf)
        keyword, _, args = joined.partition(" ")
        out.append(_Instruction(keyword.upper(), args.strip(), start, joined))
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
            plan.steps.append(_parse_copy(kw, rest, plan, variables, path, ins))
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
    if argv is None:
        if _HEREDOC.search(rest):
            raise refuse(path, ins.line, ins.text, "heredocs need BuildKit")
        argv = [*plan.shell, rest]
    if not argv:
        raise refuse(path, ins.line, ins.text, "RUN with nothing to run")
    env = {"PATH": DEFAULT_PATH, **{k: v for k, v in variables.items() if k not in plan.env}, **plan.env}
    return RunStep(tuple(argv), tuple(sorted(env.items())), plan.workdir, plan.user,
                   flags.get("network") or None, ins.line)


def _parse_copy(kw: str, rest: str, plan: ImagePlan, variables: dict[str, str], path: str,
                ins: _Instruction) -> CopyStep:
    flags, rest = _flags(rest)
    if "from" in flags:
        raise refuse(path, ins.line, ins.text, f"{kw} --from needs another image")
    unknown = set(flags) - {"chown", "chmod", "link"}
    if unknown:
        raise refuse(path, ins.line, ins.text, f"{kw} --{sorted(unknown)[0]} is not supported")
    if _HEREDOC.search(rest):
        raise refuse(path, ins.line, ins.text, f"heredoc {kw} needs BuildKit")
    words = _json_array(rest)
    if words is None:
        try:
            words = shlex.split(rest)
        except ValueError as exc:
            raise refuse(path, ins.line, ins.text, f"{kw} does not parse: {exc}") from None
    words = [substitute(w, variables) for w in words]
    if len(words) < 2:
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
    dest_is_dir = dest.endswith("/") or len(sources) > 1 or any(any(c in s for c in "*?[") for s in sources)
    return CopyStep(tuple(sources), _abs(dest, plan.workdir), dest_is_dir,
                    substitute(flags["chown"], variables) if flags.get("chown") else None,
                    chmod, kw == "ADD", ins.line)
