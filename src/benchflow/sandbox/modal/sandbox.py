"""One Modal sandbox for one trial, through the ``modal`` SDK's async API (``.aio``).

``build`` has Modal build the image (``modal.Image.from_dockerfile`` with the
task's ``environment/`` as context, or ``from_registry`` for a prebuilt image;
Modal caches builds by their definition, so an unchanged task reuses its
image); ``start`` creates the sandbox (:func:`.modal.backend.create_kwargs`:
cpu/memory, ``block_network``, owner tags) in the app of the backend, learns
its id before anything else can fail, so a failed or cancelled start
terminates it, then runs the docker backend's setup script (agent user,
``/logs``). Every command is a Modal exec with real stdio: stdin is written and
closed, stdout and stderr stream back as bytes. A command carries a per-exec
marker in its environment (``BENCHFLOW_EXEC_ID``) so a timeout kills its whole
tree, ``setsid`` children too. Files move as one tar through an exec's stdin
(``put``) or stdout (``get``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from benchflow.errors import BuildError, CapabilityError, InfraError, SandboxError

from ..base import DEFAULT_OUTPUT_CAP_BYTES, Capabilities, ExecResult, SandboxSpec
from ..bundled_skills import in_folder
from ..copyout import CopyReport, copy_out_tar
from ..marked_commands import MARKER, argv
from ..remote_common import (
    CHUNK,
    DRAIN_AFTER_KILL_SEC,
    GONE_RC,
    exec_result,
    file_chunks,
    first_line,
    gone,
    tar_of,
)
from ..remote_dockerfile import dockerfile_text, remote_build, with_files
from ..docker_exec import KILL_TREE
from ..one_container import OneContainerSandbox
from ..tarstream import pack

log = logging.getLogger(__name__)

LIFETIME_SEC = 24 * 3600
"""Modal's longest sandbox lifetime: what a killed run leaves ends by itself after it."""


class ModalSandbox(OneContainerSandbox):
    """See the module docstring. ``labels`` are the owner labels written on the sandbox as tags."""

    KIND = "the Modal sandbox"
    DOC = "docs/modal.md"
    NO_MOUNTS = "it runs in Modal's cloud"

    def __init__(self, spec: SandboxSpec, *, capabilities: Capabilities, labels: Mapping[str, str]) -> None:
        super().__init__(spec, capabilities=capabilities, labels=labels)
        self._client = None
        self._app = None
        self._image = None
        self._box = None
        self._replaced: list = []
        self._scratch: Path | None = None

    async def _connect(self) -> None:
        import modal

        from .backend import aclient, app_name

        if self._client is None:
            self._client = await aclient()
        if self._app is None:
            self._app = await modal.App.lookup.aio(app_name(), create_if_missing=True, client=self._client)

    def _definition(self):
        """The ``modal.Image`` of the spec (nothing is sent yet)."""
        import modal

        if self.spec.image:
            return modal.Image.from_registry(self.spec.image)
        source = remote_build(self.spec)  # a missing Dockerfile fails here, before anything is created
        context = Path(self.spec.environment_dir)
        if self.spec.bundled_skills and not source.files and source.dockerfile == dockerfile_text(self.spec):
            return modal.Image.from_dockerfile(context / self.spec.dockerfile, context_dir=context)
        self._scratch = Path(tempfile.mkdtemp(prefix="bf-modal-"))
        (self._scratch / "Dockerfile").write_text(source.dockerfile)
        if source.files:  # heredoc COPY bodies: a context of environment/ and those files
            context = with_files(context, source.files, self._scratch / "context")
        skip = (lambda path: False) if self.spec.bundled_skills else (lambda path: in_folder(Path(path).as_posix()))
        return modal.Image.from_dockerfile(self._scratch / "Dockerfile", context_dir=context, ignore=skip)

    async def build(self) -> None:
        """Have Modal build the image (a cache hit when the definition is unchanged)."""
        if self._image is not None:
            return
        self._refuse_what_it_cannot_do()
        image = self._definition()
        try:
            await self._connect()
            self._image = await asyncio.wait_for(image.build.aio(self._app), self.spec.build_timeout_sec)
        except (CapabilityError, BuildError):
            raise
        except TimeoutError as exc:
            raise BuildError(f"{self.spec.name}: the Modal image build took longer than "
                             f"{self.spec.build_timeout_sec:g}s") from exc
        except Exception as exc:  # the SDK names what failed; the build log is Modal's
            raise BuildError(f"{self.spec.name}: Modal could not build the image: {first_line(exc)}",
                             log_tail=str(exc)[-4000:]) from exc

    def _started(self) -> bool:
        return self._box is not None

    async def _create(self, image=None) -> None:
        """Create the sandbox from ``image`` (None: the one ``build`` made)."""
        import modal

        from .backend import create_kwargs

        image = self._image if image is None else image
        await self._connect()
        try:
            self._box = await modal.Sandbox.create.aio(
                app=self._app, image=image, client=self._client,
                **create_kwargs(self.spec, self.labels, timeout_sec=LIFETIME_SEC))
        except Exception as exc:
            raise SandboxError(f"{self.spec.name}: Modal did not create the sandbox: {first_line(exc)}") from exc
        self._id = self._box.object_id

    async def _image_workdir(self) -> str | None:
        """Where an exec starts: the image's WORKDIR."""
        return (await self._run(["pwd"], timeout=120))[1].text().strip() or None

    def _require(self):
        if self._box is None or self._stopped:
            raise self._not_running()
        return self._box

    async def open(self, words: list[str]):
        """Start ``words`` as a Modal exec with binary stdio and return the SDK's process."""
        try:
            return await self._require().exec.aio(*words, text=False)
        except InfraError:
            raise
        except Exception as exc:
            raise InfraError(f"exec in Modal sandbox {self._id}: {first_line(exc)}") from exc

    async def _run(self, words: list[str], *, timeout: float | None, stdin: bytes | None = None,
                   marker: str | None = None, cap: int = DEFAULT_OUTPUT_CAP_BYTES * 64
                   ) -> tuple[int | None, _Collector, _Collector]:
        """Run ``words`` to its end: (exit code or None on timeout, stdout, stderr)."""
        process = await self.open(words)
        out, err = _Collector(cap), _Collector(cap)

        async def send() -> None:
            try:
                await feed(process.stdin, stdin or b"")
            except Exception:  # noqa: BLE001, S110 - the command ended without reading all its stdin
                pass

        async def finish() -> int:
            await asyncio.gather(send(), out.read(process.stdout), err.read(process.stderr))
            return await process.wait.aio()

        task = asyncio.ensure_future(finish())
        try:
            code = await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            if marker is not None:
                await self.kill(marker)
            try:
                await asyncio.wait_for(asyncio.shield(task), DRAIN_AFTER_KILL_SEC)
            except (TimeoutError, Exception):  # noqa: BLE001 - the output so far is what there is
                task.cancel()
            code = None
        except asyncio.CancelledError:
            task.cancel()
            raise
        except Exception as exc:
            raise InfraError(f"exec in Modal sandbox {self._id}: {first_line(exc)}") from exc
        return code, out, err

    async def kill(self, marker: str) -> None:
        """Stop, then kill, every process of the exec ``marker`` (its whole tree, setsid children too)."""
        await self._run(["sh", "-c", KILL_TREE, "sh", "", marker], timeout=30)

    async def exec(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, timeout: float | None = None, stdin: bytes | None = None,
                   output_cap: int = DEFAULT_OUTPUT_CAP_BYTES) -> ExecResult:
        self._require()
        marker = secrets.token_hex(8)
        words = argv(cmd, cwd=cwd or self.workdir, env={MARKER: marker, **(env or {})}, user=user)
        code, out, err = await self._run(words, timeout=timeout, stdin=stdin, marker=marker, cap=output_cap)
        return exec_result(code, out.text(), err.text(), truncated=out.cut or err.cut, timeout=timeout)

    async def exec_stream(self, cmd: list[str], *, user: str | None = None,
                          env: Mapping[str, str] | None = None, cwd: str | None = None):
        from .stream import ModalProcess

        self._require()
        marker = secrets.token_hex(8)
        words = argv(cmd, cwd=cwd or self.workdir, env={MARKER: marker, **(env or {})}, user=user)
        return ModalProcess(self, await self.open(words), marker)

    async def put(self, local: Path, remote: str) -> None:
        local = self._put_source(local)
        process = await self.open(["tar", "-xpf", "-", "-C", "/"])
        err = _Collector(64 << 10)
        reading = asyncio.ensure_future(asyncio.gather(_Collector(0).read(process.stdout), err.read(process.stderr)))
        try:
            with pack(local, remote) as archive:
                while chunk := await asyncio.to_thread(archive.read, CHUNK):
                    process.stdin.write(chunk)
                    await process.stdin.drain.aio()
            process.stdin.write_eof()
            await process.stdin.drain.aio()
            await reading
            code = await process.wait.aio()
        except Exception as exc:
            reading.cancel()
            raise InfraError(f"put {local} -> {remote} in Modal sandbox {self._id}: {first_line(exc)}") from exc
        if code != 0:
            raise InfraError(f"put {local} -> {remote}: {bytes(err.data).decode(errors='replace').strip()[-300:]}")

    async def get(self, remote: str, local: Path) -> CopyReport:
        name = PurePosixPath(remote)
        with tempfile.TemporaryDirectory() as spool:
            target = Path(spool) / "archive.tar"
            process = await self.open(tar_of(name))
            err = _Collector(64 << 10)
            try:
                await feed(process.stdin, b"")
                with target.open("wb") as handle:
                    await asyncio.gather(_write_to(process.stdout, handle), err.read(process.stderr))
                code = await process.wait.aio()
            except Exception as exc:
                raise InfraError(f"get {remote} from Modal sandbox {self._id}: {first_line(exc)}") from exc
            if code == GONE_RC:
                raise gone(remote)
            if code != 0:
                raise InfraError(f"get {remote}: {bytes(err.data).decode(errors='replace').strip()[-300:]}")
            return await asyncio.to_thread(lambda: copy_out_tar(file_chunks(target), name.name, Path(local)))

    async def snapshot(self, *, retain: bool = False) -> str:
        """A Modal filesystem snapshot (an image id); Modal keeps it for a day and has no call to delete it."""
        from .backend import SNAPSHOT_TTL_SEC

        if retain:
            raise CapabilityError("--sandbox modal: a snapshot cannot be retained (Modal has no call to delete "
                                  "one, so BenchFlow could not clean it up)")
        box = self._require()
        try:
            image = await box.snapshot_filesystem.aio(timeout=600, ttl=SNAPSHOT_TTL_SEC)
        except Exception as exc:
            raise InfraError(f"snapshot of Modal sandbox {self._id}: {first_line(exc)}") from exc
        return image.object_id

    async def restore(self, ref: str) -> None:
        """A new sandbox started from the snapshot image ``ref`` takes this one's place (which is
        terminated); before ``start()``, the sandbox starts straight from it."""
        import modal

        self._refuse_if_stopped()
        if self._box is not None:
            self._replaced.append(self._box)  # terminated below, or by stop() when the restore fails
        self._box = None

        async def create() -> None:
            await self._connect()
            await self._create(modal.Image.from_id(ref, client=self._client))

        await self._bring_up(create, self._setup)
        while self._replaced:
            await _terminate(self._replaced.pop())

    async def _stop_all(self) -> None:
        self._stopped = True
        for box in [self._box, *self._replaced]:
            if box is not None:
                await _terminate(box)
        if self._client is not None:
            try:
                await self._client.close.aio()
            except Exception:  # noqa: BLE001, S110 - its connections go with the process anyway
                pass
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)


async def _terminate(box) -> None:
    """Terminate a Modal sandbox; a failure is logged (``bench sandbox cleanup`` removes what stayed)."""
    try:
        await box.terminate.aio()
    except Exception as exc:  # noqa: BLE001
        log.warning("could not terminate Modal sandbox %s: %s (bench sandbox cleanup removes it)",
                    box.object_id, first_line(exc))


class _Collector:
    """The bytes of one stream, kept up to ``cap`` (the rest is read and counted, not kept)."""

    def __init__(self, cap: int) -> None:
        self.cap, self.data, self.total = cap, bytearray(), 0

    @property
    def cut(self) -> bool:
        return self.total > self.cap

    async def read(self, stream) -> None:
        async for chunk in stream:
            self.total += len(chunk)
            room = self.cap - len(self.data)
            if room > 0:
                self.data.extend(chunk[:room])

    def text(self) -> str:
        """What was kept, decoded, with a note saying how much was dropped when the stream was cut."""
        text = self.data.decode("utf-8", errors="replace")
        if self.cut:
            text += f"\n[output truncated: {self.total - self.cap} more bytes not shown (cap {self.cap} bytes)]\n"
        return text


async def feed(writer, data: bytes) -> None:
    """Write ``data`` to a Modal exec's stdin in chunks, then close it."""
    for start in range(0, len(data), CHUNK):
        writer.write(data[start:start + CHUNK])
        await writer.drain.aio()
    writer.write_eof()
    await writer.drain.aio()


async def _write_to(stream, handle) -> None:
    async for chunk in stream:
        await asyncio.to_thread(handle.write, chunk)
