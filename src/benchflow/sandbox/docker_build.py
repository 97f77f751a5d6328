"""Building task images on a Docker engine, once per task content.

The tag is derived from the spec's ``cache_key`` (the task's content digest)
plus whatever else changes the image (the Dockerfile name, a ``FROM``
override, the CA bundle), so a changed task gets a new tag and rebuilds while
an unchanged one is found by a single ``inspect`` and never rebuilt.

The build context is a tar made here from ``environment/`` (``.dockerignore``
honoured, caches such as ``.venv`` and ``.git`` left out) with the Dockerfile
rewritten in the tar only, so the task folder is never touched. Builds run
with network mode ``host`` or ``none`` (an engine started with
``--bridge=none`` has no bridge for them), at most :func:`build_slots` at a
time per process, and two sandboxes asking for the same tag build it once.
The timeout closes the build's HTTP stream, which makes the engine cancel it.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import logging
import os
import re
import weakref
from dataclasses import dataclass
from pathlib import Path

from benchflow.errors import BuildError, TaskError

from . import bundled_skills, ca, dockerfile_heredoc, dockerfile_lines
from .base import SandboxSpec
from .docker_engine import call

IGNORED = {".venv", "__pycache__", ".pytest_cache", "node_modules", ".git", ".mypy_cache", ".ruff_cache"}
LOG_TAIL_LINES = 40
MAX_BUILDS_ENV = "BENCHFLOW_MAX_CONCURRENT_BUILDS"
BUILD_SLOTS_ENV = "BENCHFLOW_BUILD_SLOTS"
"""A folder of slot files (``util.file_slots``) shared by worker shards: at most that many builds across them."""

log = logging.getLogger(__name__)

LOST_LAYER = ("unknown parent image ID", "failed to set parent")
"""What the engine says when a cached layer a build reused was removed while it ran (an image removal,
``bench cache``'s or another process's, took the untagged layers under it): building again finds no
such cache and makes the layer anew."""

_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)


@dataclass
class BuildOutcome:
    tag: str
    cached: bool
    log: str = ""
    """The engine's build output (empty when the image was already there)."""


def image_tag(spec: SandboxSpec) -> str:
    """``benchflow/<task>:<hash>``: the hash covers cache_key and everything that changes the image."""
    parts = {"cache_key": spec.cache_key, "dockerfile": spec.dockerfile,
             "from": spec.base_image_override or ""}
    if spec.ca_bundle is not None:
        parts["ca"] = hashlib.sha256(ca.read_bundle(spec.ca_bundle)).hexdigest()
    if _strips_skills(spec):
        parts["skills"] = "left-out"
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]
    name = re.sub(r"[^a-z0-9._-]+", "-", spec.name.lower()).strip("._-") or "task"
    return f"benchflow/{name[:100]}:{digest}"


def rewrite_from(dockerfile: str, image: str) -> str:
    """``dockerfile`` with every ``FROM`` image that is not an earlier stage replaced by ``image``."""
    stages: set[str] = set()
    out = []
    for group in dockerfile_lines.instructions(dockerfile):
        match = _FROM.match(group[0])
        if match:
            head, flags, base, rest = match.groups()
            alias = re.search(r"\bAS\s+(\S+)", rest, re.IGNORECASE)
            if base.lower() not in stages:
                group = [f"{head}{flags}{image}{rest}", *group[1:]]
            if alias:
                stages.add(alias.group(1).lower())
        out.extend(group)
    return "\n".join(out) + "\n"


def check_environment(spec: SandboxSpec) -> Path:
    """The Dockerfile path (a compose file beside it is run by :mod:`.docker.pod`).

    Raises:
        TaskError: no Dockerfile.
    """
    env = spec.environment_dir
    if env is None:
        raise TaskError(f"{spec.name}: no environment/ folder and no sandbox.docker_image; "
                        "add environment/Dockerfile or set sandbox.docker_image")
    dockerfile = env / spec.dockerfile
    if not dockerfile.is_file():
        raise TaskError(f"{dockerfile}: missing; add environment/{spec.dockerfile} "
                        "or set sandbox.docker_image")
    return dockerfile


def _strips_skills(spec: SandboxSpec) -> bool:
    return not spec.bundled_skills and bundled_skills.present(spec.environment_dir)


def context_tar(spec: SandboxSpec) -> io.BufferedIOBase:
    """The build context as an uncompressed tar, Dockerfile rewritten, CA bundle added
    (and, for a no-skill run, the task's ``skills/`` left out); heredocs are translated for the
    engine's classic builder (:mod:`.dockerfile_heredoc`), their ``COPY`` bodies added as files.

    Raises:
        BuildError: a heredoc that cannot be translated.
    """
    import tarfile  # here, not at the top: a run whose image is cached never builds a context

    from docker.utils.build import exclude_paths

    from .tarstream import spool

    env = check_environment(spec).parent
    text = (env / spec.dockerfile).read_text(encoding="utf-8")
    if spec.base_image_override:
        text = rewrite_from(text, spec.base_image_override)
    strip = _strips_skills(spec)
    if strip:
        text = bundled_skills.without_skill_copies(text)
    extra: dict[str, tuple[bytes, int]] = {}
    if spec.ca_bundle is not None:
        extra[ca.CONTEXT_NAME] = (ca.read_bundle(spec.ca_bundle), 0o644)
        text = ca.inject(text)
    text, inline = dockerfile_heredoc.for_classic_builder(text)
    extra.update({file.path: (file.data, file.mode) for file in inline})
    extra[spec.dockerfile] = (text.encode("utf-8"), 0o644)
    ignore_file = env / ".dockerignore"
    patterns = ignore_file.read_text().splitlines() if ignore_file.is_file() else []
    keep = exclude_paths(str(env), patterns, dockerfile=spec.dockerfile)
    buffer = spool()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for rel in sorted(keep):
            if rel in extra or IGNORED.intersection(Path(rel).parts) or (strip and bundled_skills.in_folder(rel)):
                continue
            archive.add(os.path.join(env, rel), arcname=rel, recursive=False)
        for rel, (data, mode) in extra.items():
            info = tarfile.TarInfo(rel)
            info.size, info.mode = len(data), mode
            archive.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


_slots: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_tag_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_limit: int | None = None


def set_build_concurrency(n: int) -> None:
    """Cap concurrent builds in this process (default: $BENCHFLOW_MAX_CONCURRENT_BUILDS or 2)."""
    global _limit
    if n < 1:
        raise ValueError("build concurrency must be at least 1")
    _limit = n
    _slots.clear()


def build_slots() -> int:
    return _limit or max(1, int(os.environ.get(MAX_BUILDS_ENV, "2") or 2))


def _per_loop(table: weakref.WeakKeyDictionary, make):
    loop = asyncio.get_running_loop()
    value = table.get(loop)
    if value is None:
        value = table[loop] = make()
    return value


def image_exists(api, tag: str) -> bool:
    from .engine_api import ImageNotFound

    try:
        api.inspect_image(tag)
    except ImageNotFound:
        return False
    return True


async def build_image(api, spec: SandboxSpec, labels: dict[str, str]) -> BuildOutcome:
    """Find or build the image for ``spec`` (built once more when a cached layer it reused was
    removed meanwhile: :data:`LOST_LAYER`).

    Raises:
        BuildError: the build failed or timed out; ``log_tail`` holds the end of the log.
    """
    tag = image_tag(spec)
    locks = _per_loop(_tag_locks, dict)
    async with locks.setdefault(tag, asyncio.Lock()):
        if await call(image_exists, api, tag):
            return BuildOutcome(tag=tag, cached=True)
        async with _per_loop(_slots, lambda: asyncio.Semaphore(build_slots())):
            from benchflow.util.file_slots import held_slot

            async with held_slot(os.environ.get(BUILD_SLOTS_ENV)):
                try:
                    return await _build(api, spec, tag, labels)
                except BuildError as exc:
                    if not any(sign in str(exc) for sign in LOST_LAYER):
                        raise
                    log.info("%s: a cached layer was removed during the build; building again", spec.name)
                    return await _build(api, spec, tag, labels)


async def _build(api, spec: SandboxSpec, tag: str, labels: dict[str, str]) -> BuildOutcome:
    context = await call(context_tar, spec)
    params = {"t": tag, "dockerfile": spec.dockerfile, "rm": True, "forcerm": True,
              "networkmode": spec.build_network, "labels": json.dumps(labels)}
    lines: list[str] = []
    response_box: list = []

    def run() -> str | None:
        response = api._post(api._url("/build"), data=context, params=params, stream=True,
                             headers={"Content-Type": "application/tar"}, timeout=None)
        response_box.append(response)
        api._raise_for_status(response)
        error = None
        for chunk in api._stream_helper(response, decode=True):
            if "stream" in chunk:
                lines.append(chunk["stream"])
            elif "error" in chunk:
                error = chunk["error"]
                lines.append(f"ERROR: {error}\n")
            elif chunk.get("status"):
                lines.append(f"{chunk['status']} {chunk.get('progress', '')}\n")
        return error

    worker = asyncio.ensure_future(call(run))
    try:
        error = await asyncio.wait_for(asyncio.shield(worker), spec.build_timeout_sec)
    except asyncio.TimeoutError:
        for response in response_box:
            abort(response)
        await asyncio.gather(worker, return_exceptions=True)
        raise BuildError(f"{spec.name}: image build timed out after {spec.build_timeout_sec:g}s "
                         "(sandbox.build_timeout_sec)", log_tail=_tail(lines)) from None
    except Exception as exc:  # noqa: BLE001 - engine/transport errors become a BuildError
        raise BuildError(f"{spec.name}: image build failed: {exc}", log_tail=_tail(lines)) from exc
    finally:
        if not worker.done():  # cancelled from outside: stop the engine's build too
            for response in response_box:
                abort(response)
        context.close()
    log = "".join(lines)
    if error is not None:
        raise BuildError(f"{spec.name}: image build failed: {error.strip()}", log_tail=_tail(lines))
    return BuildOutcome(tag=tag, cached=False, log=log)


def abort(response) -> None:
    """Cut a streaming HTTP response so a thread blocked reading it wakes up (the engine
    then cancels the request's work)."""
    import socket

    fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
    candidates = [getattr(getattr(fp, "raw", None), "_sock", None), getattr(fp, "raw", None),
                  getattr(getattr(response.raw, "_connection", None), "sock", None)]
    for sock in candidates:
        if hasattr(sock, "shutdown"):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
    response.close()


def _tail(lines: list[str]) -> str:
    return "".join("".join(lines).splitlines(keepends=True)[-LOG_TAIL_LINES:])
