"""One Apple container (a lightweight Linux VM of its own) for one trial, through the ``container`` CLI.

``build`` runs ``container build`` on the task's context (the same context the
docker backend sends its engine: ``.dockerignore`` honoured, Dockerfile
rewritten for a ``FROM`` override, the CA bundle and a no-skill run; see
:mod:`.docker_build`), tagged by the task's content digest, so an unchanged
task is found by one ``image inspect`` and never rebuilt; a prebuilt image is
pulled when it is not there. Apple's builder has no build network option:
builds use the builder VM's network whatever ``build_network`` says.

``start`` runs the container detached under a name chosen beforehand (the
CLI's ``--name`` is the container's id), so a failed or cancelled start
deletes it by that name; a start that was already asked for is let finish
first, so nothing is created after the delete. The container idles in the
keep-alive loop of :mod:`.docker_setup`; the setup script then runs as an exec
(agent user, ``/logs``). ``no-network`` and ``allowlist`` are
``--network none`` (the VM gets no network interface at all: loopback only),
``public`` the ``default`` vmnet network. CPUs are whole (the VM's), memory
is in MiB. Files go as one tar through an exec's stdin or stdout
(:mod:`.copyout` makes what comes out safe). ``stop`` is ``delete --force``,
unless ``keep()`` kept the container (:mod:`.apple_container.kept`).
``create_unstarted`` (``bench sandbox create``) makes it with ``container
create`` instead: not started, it sets itself up at its first start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from benchflow.errors import (
    BuildError,
    CapabilityError,
    InfraError,
    SandboxError,
    SandboxUnavailable,
)
from benchflow.util.tarfile_filters import tarfile

from . import cli as cli
from . import exec as ex
from . import kept as kept
from .. import docker_engine as eng
from ..base import DEFAULT_OUTPUT_CAP_BYTES, Capabilities, ExecResult, SandboxSpec
from ..copyout import CopyReport, copy_out_tar
from ..docker_build import BUILD_SLOTS_ENV, build_slots, context_tar, image_tag
from ..docker_setup import KEEPALIVE, MAIN
from ..local_exec import kill, spawn
from ..one_container import OneContainerSandbox
from ..remote_common import GONE_RC, gone, tar_of
from ..tarstream import pack

log = logging.getLogger(__name__)

LOG_TAIL_LINES = 40
SETUP_TIMEOUT_SEC = 120
SELF_SETUP = 'wd=$2; [ -n "$wd" ] || wd=$(pwd); [ "$wd" != / ] || wd=/root; exec /bin/sh -c "$3" sh "$1" "$wd"'
"""The first process of a container made by :func:`create_args`: the workdir is the task's, else the image's
``WORKDIR`` (where the process starts; ``/`` is ``/root``, as :func:`.docker_setup.resolve_workdir` says),
then :data:`.docker_setup.MAIN` sets up, prints its ready line (``container logs`` shows it) and idles."""
HOME_OF = ('while IFS=: read -r name _ uid _ _ home _; do '
           'if [ "$name" = "$1" ] || [ "$uid" = "$1" ]; then echo "$home"; exit 0; fi; done < /etc/passwd')
_tag_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per event loop: one build per image tag at a time (two sandboxes of one task build it once)."""
_slots: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per event loop: at most :func:`.docker_build.build_slots` builds at once (``--build-concurrency``)."""


def _of_loop(table: weakref.WeakKeyDictionary, make):
    loop = asyncio.get_running_loop()
    if loop not in table:
        table[loop] = make()
    return table[loop]


def network_flag(mode: str) -> str:
    """The CLI's ``--network`` for a sandbox network mode."""
    if mode in ("no-network", "allowlist"):
        return "none"
    if mode == "public":
        return "default"
    raise CapabilityError(f"sandbox.network_mode={mode!r} is not supported by the apple-container sandbox; "
                          "use public, allowlist or no-network")


def _shape(name: str, spec: SandboxSpec, labels: Mapping[str, str]) -> list[str]:
    """The options ``container run`` and ``container create`` share; ``spec.env`` goes as ``--env KEY``."""
    args = ["--name", name, "--network", network_flag(spec.network_mode),
            "--cpus", str(max(1, math.ceil(spec.cpus))), "--memory", f"{max(1, int(spec.memory_mb))}M"]
    for key, value in labels.items():
        args += ["--label", f"{key}={value}"]
    for key in spec.env:
        args += ["--env", key]
    return args


def run_args(name: str, image: str, spec: SandboxSpec, labels: Mapping[str, str]) -> list[str]:
    """``container run`` for one sandbox (without the executable): started, idling until ``stop``."""
    return ["run", "--detach", *_shape(name, spec, labels), "--entrypoint", "/bin/sh", image, "-c", KEEPALIVE]


def create_args(name: str, image: str, spec: SandboxSpec, labels: Mapping[str, str]) -> list[str]:
    """``container create`` for one sandbox (without the executable): made, not started. Its first
    start runs :data:`SELF_SETUP`, which sets it up as a trial's sandbox is, then idles."""
    return ["create", *_shape(name, spec, labels), "--entrypoint", "/bin/sh", image, "-c", SELF_SETUP, "sh",
            spec.sandbox_user or "", spec.workdir or "", MAIN]


class AppleContainerSandbox(OneContainerSandbox):
    """See the module docstring (the ``Sandbox`` protocol of base.py)."""

    KIND = "the apple-container sandbox"
    DOC = "docs/apple-container.md"
    NO_MOUNTS = "a unix socket does not cross into its VM"

    def __init__(self, spec: SandboxSpec, *, capabilities: Capabilities, labels: Mapping[str, str]) -> None:
        super().__init__(spec, capabilities=capabilities, labels=labels)
        self.image: str | None = None
        self.build_log = ""
        self.name = f"bf-{_slug(spec.name)[:40]}-{secrets.token_hex(4)}"
        self._running = False
        self._kept = False
        self._homes: dict[str, str] = {}

    def _check_network(self) -> None:
        network_flag(self.spec.network_mode)

    async def build(self) -> None:
        """Find or build (or pull) the image; see the module docstring.

        Raises:
            BuildError: the build failed or timed out; ``log_tail`` holds the end of its output.
        """
        self._refuse_what_it_cannot_do()
        if self.image is not None:
            return
        if self.spec.image:
            await self._pull(self.spec.image)
            self.image = self.spec.image
            return
        from benchflow.util.file_slots import held_slot

        tag = image_tag(self.spec)
        async with _of_loop(_tag_locks, dict).setdefault(tag, asyncio.Lock()):
            if (await asyncio.to_thread(cli.run, ["image", "inspect", tag])).returncode != 0:
                async with (_of_loop(_slots, lambda: asyncio.Semaphore(build_slots())),
                            held_slot(os.environ.get(BUILD_SLOTS_ENV))):  # the slots worker shards share
                    self.build_log = await self._build(tag)
        self.image = tag

    async def _pull(self, ref: str) -> None:
        from .backend import BACKEND

        ok, why = await asyncio.to_thread(BACKEND.image_status, ref)
        if not ok:
            raise SandboxError(f"sandbox.docker_image {ref!r} {why}; load or build it first")

    async def _build(self, tag: str) -> str:
        marks = cli.owner_labels({eng.TASK: self.spec.name, **self.spec.labels}) | {
            eng.KIND: "image", eng.CACHE_KEY: self.spec.cache_key}
        with tempfile.TemporaryDirectory(prefix="bf-apple-build-") as folder:
            await asyncio.to_thread(_unpack_context, self.spec, Path(folder))
            args = [cli.executable(), "build", "--tag", tag, "--file", str(Path(folder) / self.spec.dockerfile),
                    "--progress", "plain"]
            for key, value in marks.items():
                args += ["--label", f"{key}={value}"]
            proc = await spawn([*args, folder], stdin=False)
            try:
                out, err = await asyncio.wait_for(proc.communicate(), self.spec.build_timeout_sec)
            except TimeoutError:
                kill(proc)
                out, err = await proc.communicate()
                raise BuildError(f"{self.spec.name}: image build timed out after {self.spec.build_timeout_sec:g}s "
                                 "(sandbox.build_timeout_sec)", log_tail=_tail(out + err)) from None
            except BaseException:
                kill(proc)
                raise
        text = (out + err).decode(errors="replace")
        if proc.returncode != 0:
            last = (_tail(out + err).strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            raise BuildError(f"{self.spec.name}: image build failed: {last.strip()[:300]}", log_tail=_tail(out + err))
        return text

    def _started(self) -> bool:
        return self._running

    async def _create(self) -> None:
        await self._make(run_args(self.name, self.image or "", self.spec, self.labels))
        self._running = True

    async def create_unstarted(self) -> None:
        """Build, then create the container without starting it (``bench sandbox create``): it sets
        itself up at its first start (:func:`create_args`). A failure or cancel deletes what was made."""
        self._refuse_if_stopped()
        await self._bring_up(self.build, lambda: self._make(
            create_args(self.name, self.image or "", self.spec, self.labels)))

    async def _make(self, args: list[str]) -> None:
        """Ask the CLI to make the container (``args``: ``run`` or ``create``)."""
        env = {**os.environ, **self.spec.env}
        self._id = self.name  # known before the CLI is asked, so a failure or cancel deletes what it made
        asking = asyncio.ensure_future(asyncio.to_thread(cli.run, args, env=env))
        try:
            done = await asyncio.shield(asking)
        except asyncio.CancelledError:
            await asyncio.gather(asking, return_exceptions=True)  # let the create land, then stop() deletes it
            raise
        if done.returncode != 0:
            raise SandboxError(f"{self.spec.name}: `container {args[0]}` failed: {cli.error_line(done)}")

    async def _image_workdir(self) -> str | None:
        """Where an exec without --workdir starts: the image's WORKDIR."""
        found = await ex.run(self._require(), ["pwd"], user=None, env=None, cwd=None, timeout=SETUP_TIMEOUT_SEC,
                             stdin=None, output_cap=DEFAULT_OUTPUT_CAP_BYTES)
        return found.stdout.strip() if found.success else None

    def _require(self) -> str:
        if not self._running or self._stopped or self._id is None:
            raise self._not_running()
        return self._id

    async def exec(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, timeout: float | None = None, stdin: bytes | None = None,
                   output_cap: int = DEFAULT_OUTPUT_CAP_BYTES) -> ExecResult:
        sandbox_id = self._require()
        env = await self._with_home(user, env)
        try:
            result = await ex.run(sandbox_id, cmd, user=user, env=env, cwd=cwd or self.workdir,
                                  timeout=timeout, stdin=stdin, output_cap=output_cap)
        except SandboxUnavailable as exc:
            raise InfraError(f"exec in apple container {sandbox_id}: {exc}") from exc
        if result.return_code != 0 and result.stderr.rstrip().rsplit("\n", 1)[-1].startswith("Error:"):
            # the CLI failed, not the command: is the sandbox gone?
            from .backend import BACKEND

            if not await asyncio.to_thread(BACKEND.exists, sandbox_id):
                raise InfraError(f"apple container {sandbox_id} is gone: {result.stderr.strip()[-300:]}")
        return result

    async def exec_stream(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                          cwd: str | None = None) -> ex.AppleProcess:
        sandbox_id = self._require()
        env = await self._with_home(user, env)
        return await ex.open_process(sandbox_id, cmd, user=user, env=env, cwd=cwd or self.workdir)

    async def _with_home(self, user: str | None, env: Mapping[str, str] | None) -> Mapping[str, str] | None:
        """``env`` with ``HOME`` of a non-root ``user`` from the container's ``/etc/passwd`` (looked up once
        per user): an exec's environment is the container's, whose ``HOME`` is root's, and an agent's
        tools write there."""
        if user in ex.ROOT_USERS or (env and "HOME" in env):
            return env
        if user not in self._homes:
            found = await ex.run(self._require(), ["sh", "-c", HOME_OF, "sh", str(user)], user=None, env=None,
                                 cwd="/", timeout=SETUP_TIMEOUT_SEC, stdin=None, output_cap=4096)
            self._homes[str(user)] = found.stdout.strip() if found.success else ""
        home = self._homes[str(user)]
        return {**(env or {}), "HOME": home} if home else env

    async def put(self, local: Path, remote: str) -> None:
        local = self._put_source(local)
        sandbox_id = self._require()
        archive = await asyncio.to_thread(pack, local, remote)
        try:
            code, err = await asyncio.to_thread(_pipe_in, sandbox_id, archive)
        finally:
            archive.close()
        if code != 0:
            raise InfraError(f"put {local} -> {remote}: {err.strip()[-300:]}")

    async def get(self, remote: str, local: Path) -> CopyReport:
        sandbox_id = self._require()
        return await asyncio.to_thread(_pipe_out, sandbox_id, PurePosixPath(remote), Path(local))

    async def snapshot(self, *, retain: bool = False) -> str:
        raise CapabilityError(f"{self.spec.name}: the apple-container sandbox has no snapshots")

    async def restore(self, ref: str) -> None:
        raise CapabilityError(f"{self.spec.name}: the apple-container sandbox has no snapshots")

    async def keep(self) -> dict[str, object]:
        """Keep the container after this run (``--keep-sandbox``): its labels cannot change, so it is
        marked kept on this machine (:func:`.kept.mark`) unless made kept; ``stop()`` then lets go of it.
        Returns the fields of ``kept-sandbox.json`` but ``trial`` and ``created_at``."""
        from .backend import NAME

        if self._id is None:
            raise self._not_running()
        if self.labels.get(eng.KEPT) != "true":
            await asyncio.to_thread(kept.mark, self._id, self.labels)
        self._kept = True
        return {"schema_version": 1, "backend": NAME, "sandbox_id": self._id}

    async def _stop_all(self) -> None:
        self._stopped = True
        if self._id is None or self._kept:
            return
        from .backend import BACKEND

        stayed = await asyncio.to_thread(BACKEND.remove, [self._id])
        if stayed:
            log.warning("could not delete apple container %s: %s (bench sandbox cleanup removes it)",
                        self._id, stayed[self._id])


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "task"


def _tail(data: bytes) -> str:
    return "".join(data.decode(errors="replace").splitlines(keepends=True)[-LOG_TAIL_LINES:])


def _unpack_context(spec: SandboxSpec, folder: Path) -> None:
    """The build context of :func:`.docker_build.context_tar`, as the folder ``container build`` reads."""
    with context_tar(spec) as buffer, tarfile.open(fileobj=buffer, mode="r") as archive:
        archive.extractall(folder, filter="tar")


def _pipe_in(sandbox_id: str, archive) -> tuple[int, str]:
    """Unpack the tar ``archive`` at ``/`` in the container through an exec's stdin: (exit status, stderr)."""
    argv, env = ex.command(sandbox_id, ["tar", "-xpf", "-", "-C", "/"], cwd="/", interactive=True)
    with subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE) as proc:
        with contextlib.suppress(BrokenPipeError):
            shutil.copyfileobj(archive, proc.stdin, 1 << 20)
        proc.stdin.close()
        err = proc.stderr.read().decode(errors="replace")
        return proc.wait(), err


def _pipe_out(sandbox_id: str, remote: PurePosixPath, local: Path) -> CopyReport:
    """``remote`` as a tar on an exec's stdout, through :func:`.copyout.copy_out_tar` to ``local``."""
    argv, env = ex.command(sandbox_id, tar_of(remote), cwd="/")
    with tempfile.TemporaryFile() as err, subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                                           stdout=subprocess.PIPE, stderr=err) as proc:
        first = proc.stdout.read(1 << 16)

        def chunks():
            try:
                yield first
                while chunk := proc.stdout.read(1 << 20):
                    yield chunk
            finally:
                if proc.poll() is None:
                    proc.kill()

        if not first:
            code = proc.wait()
            err.seek(0)
            if code == GONE_RC:
                raise gone(remote)
            raise InfraError(f"get {remote}: {err.read().decode(errors='replace').strip()[-300:] or f'exit {code}'}")
        return copy_out_tar(chunks(), remote.name, local)
