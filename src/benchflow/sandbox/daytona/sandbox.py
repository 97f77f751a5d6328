"""One Daytona sandbox for one trial, through the ``daytona`` SDK (its generated API clients).

``build`` uploads the build context (:mod:`.daytona.build`); ``start`` creates
the sandbox with ``POST /sandbox`` (labels, env, cpu/memory, ``networkBlockAll``
for ``no-network``) and learns its id before anything else can fail, so a
failed or cancelled start deletes it; then the setup script of the docker
backend runs (agent user, ``/logs``). Every command is a session command in a
session of its own (:mod:`.marked_commands`), polled until it ends; files go
as one tar through the toolbox's upload/download endpoints.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from benchflow.errors import BuildError, InfraError, SandboxError

from .. import marked_commands as cmds
from ..base import DEFAULT_OUTPUT_CAP_BYTES, Capabilities, ExecResult, SandboxSpec
from ..copyout import CopyReport, copy_out_tar
from ..one_container import OneContainerSandbox
from ..remote_common import (
    DRAIN_AFTER_KILL_SEC,
    GONE_RC,
    capped_result,
    file_chunks,
    gone,
    put_by_upload,
    stdin_file,
    tar_of,
)
from ..remote_dockerfile import RemoteBuild, remote_build
from ..tarstream import pack
from .build import upload_context, write_context

log = logging.getLogger(__name__)

START_TIMEOUT_SEC = 600.0
POLL_SEC = 0.05
POLL_MAX_SEC = 1.0
"""Polls of a running command start every 50 ms and slow down to once a second (a long command
costs Daytona's API one request a second, a short one answers at once)."""


class DaytonaSandbox(OneContainerSandbox):
    """See the module docstring. ``labels`` are the owner labels written on the sandbox."""

    KIND = "the Daytona sandbox"
    DOC = "docs/daytona.md"
    NO_MOUNTS = "it runs in Daytona's cloud"

    def __init__(self, spec: SandboxSpec, *, capabilities: Capabilities, labels: Mapping[str, str]) -> None:
        super().__init__(spec, capabilities=capabilities, labels=labels)
        self._client = None
        self._box = None
        self._context: list[str] | None = None
        self._remote_build: RemoteBuild | None = None
        self._kept = False
        self._snapshots: list[str] = []
        self.name = f"bf-{spec.name[:40]}-{secrets.token_hex(4)}"

    @classmethod
    async def attached(cls, sandbox_id: str) -> DaytonaSandbox:
        """A handle on an existing sandbox (a kept one), started if it was stopped; ``stop()`` leaves it."""
        from daytona import AsyncDaytona, DaytonaConfig

        from .backend import BACKEND, settings

        url, key = settings()
        sandbox = cls(SandboxSpec(name="attached", environment_dir=None, cache_key=""),
                      capabilities=BACKEND.capabilities, labels={})
        sandbox._kept = True
        sandbox._client = AsyncDaytona(DaytonaConfig(api_key=key, api_url=url))
        try:
            sandbox._box = await sandbox._client.get(sandbox_id)
        except Exception as exc:
            await sandbox.stop()
            raise SandboxError(f"Daytona sandbox {sandbox_id} no longer exists (released or cleaned up)") from exc
        sandbox._id = sandbox_id
        if str(getattr(sandbox._box.state, "value", sandbox._box.state)) != "started":
            await sandbox._box.start(timeout=START_TIMEOUT_SEC)
        sandbox._workdir = (await sandbox._run_line("pwd < /dev/null", timeout=60))[1].strip() or "/"
        return sandbox

    async def build(self) -> None:
        """Upload the build context (content-addressed: once per digest). Daytona builds at start."""
        if self._context is not None:
            return
        self._refuse_what_it_cannot_do()
        source = self._source()  # a missing Dockerfile fails here, before anything is created
        from .backend import client

        def push() -> list[str]:
            with tempfile.TemporaryFile() as archive:
                if not write_context(self.spec, archive, source.files):
                    return []
                return [upload_context(client()._object_storage_api, archive)]

        try:
            self._context = await asyncio.to_thread(push)
        except Exception as exc:  # any transport or storage failure is a build failure
            raise BuildError(f"{self.spec.name}: uploading the build context to Daytona failed: {exc}") from exc

    def _source(self) -> RemoteBuild:
        """The Dockerfile Daytona builds and the heredoc files its context adds (read once per sandbox)."""
        if self._remote_build is None:
            self._remote_build = remote_build(self.spec)
        return self._remote_build

    def _started(self) -> bool:
        return self._box is not None

    async def _create(self, snapshot: str | None = None) -> None:
        """Create the sandbox (from ``snapshot`` when given, else from the build) and wait until it runs."""
        from daytona import AsyncDaytona, DaytonaConfig
        from daytona_api_client_async import CreateBuildInfo, CreateSandbox

        from .backend import settings

        if self._client is None:
            url, key = settings()
            self._client = AsyncDaytona(DaytonaConfig(api_key=key, api_url=url))
        request = CreateSandbox(
            name=self.name if snapshot is None else f"{self.name}-{secrets.token_hex(3)}", user="root",
            env=dict(self.spec.env), labels=self.labels, cpu=max(1, round(self.spec.cpus)),
            memory=max(1, -(-self.spec.memory_mb // 1024)),
            network_block_all=self.spec.network_mode == "no-network", auto_stop_interval=0)
        if snapshot is not None:
            request.snapshot = snapshot
        else:
            request.build_info = CreateBuildInfo(dockerfile_content=self._source().dockerfile,
                                                 context_hashes=list(self._context or []))
        api = self._client._sandbox_api  # the SDK's generated REST client; daytona.create hides the id
        response = await api.create_sandbox(request)
        self._id = response.id
        self._box = await self._client.get(response.id)
        try:
            await self._box.wait_for_sandbox_start(timeout=self.spec.build_timeout_sec + START_TIMEOUT_SEC)
        except Exception as exc:  # the SDK names the state it ended in and why
            state = getattr(self._box, "state", "?")
            raise BuildError(f"{self.spec.name}: the Daytona sandbox did not start ({state}): {exc}",
                             log_tail=str(getattr(self._box, "error_reason", "") or "")) from exc

    async def _image_workdir(self) -> str | None:
        """Where a session's shell starts: the image's WORKDIR."""
        return (await self._run_line("pwd < /dev/null", timeout=60))[1].strip() or None

    def _require(self):
        if self._box is None or self._stopped:
            raise self._not_running()
        return self._box

    async def _run_line(self, line: str, *, timeout: float | None,
                        marker: str | None = None) -> tuple[int | None, str, str]:
        """Run one session command to its end: (exit code or None on timeout, stdout, stderr)."""
        from daytona import SessionExecuteRequest

        box = self._require()
        session = f"bf-{secrets.token_hex(6)}"
        try:
            await box.process.create_session(session)
            started = await box.process.execute_session_command(
                session, SessionExecuteRequest(command=line, run_async=True))
            code = await self._wait(session, started.cmd_id, timeout)
            if code is None and marker is not None:
                await self.kill(marker)
                await self._wait(session, started.cmd_id, DRAIN_AFTER_KILL_SEC)
            logs = await box.process.get_session_command_logs(session, started.cmd_id)
            return code, logs.stdout or "", logs.stderr or ""
        except (InfraError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a transport or API failure mid-exec
            raise InfraError(f"exec in Daytona sandbox {self._id}: {exc}") from exc
        finally:
            if not self._stopped:  # each session holds a shell in the sandbox
                await self._forget(session)

    async def _forget(self, session: str) -> None:
        try:
            await self._box.process.delete_session(session)
        except Exception:  # noqa: BLE001, S110 - the sandbox may be gone; the session goes with it
            pass

    async def _wait(self, session: str, command_id: str, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = POLL_SEC
        while True:
            command = await self._box.process.get_session_command(session, command_id)
            if command.exit_code is not None:
                return command.exit_code
            if deadline is not None and time.monotonic() >= deadline:
                return None
            await asyncio.sleep(delay if deadline is None else min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 1.5, POLL_MAX_SEC)

    async def kill(self, marker: str) -> None:
        """Kill every process of the exec ``marker`` (its whole tree, setsid children too)."""
        await self._run_line(cmds.kill_line(marker), timeout=30)

    async def exec(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, timeout: float | None = None, stdin: bytes | None = None,
                   output_cap: int = DEFAULT_OUTPUT_CAP_BYTES) -> ExecResult:
        self._require()
        marker = secrets.token_hex(8)
        words = cmds.argv(cmd, cwd=cwd or self.workdir, env=env, user=user)
        stdin_path = await stdin_file(stdin, marker, self._upload)
        try:
            code, out, err = await self._run_line(cmds.command_line(words, marker, stdin_path=stdin_path),
                                                  timeout=timeout, marker=marker)
        finally:
            if stdin_path is not None and not self._stopped:
                await self._run_line(f"rm -f {stdin_path}", timeout=30)
        return capped_result(code, out, err, cap=output_cap, timeout=timeout)

    async def exec_stream(self, cmd: list[str], *, user: str | None = None,
                          env: Mapping[str, str] | None = None, cwd: str | None = None):
        from .stream import open_process

        self._require()
        return await open_process(self, cmds.argv(cmd, cwd=cwd or self.workdir, env=env, user=user))

    async def _upload(self, data: bytes | Path, remote: str) -> None:
        """Upload ``data`` (bytes, or a local file streamed from disk) to ``remote``."""
        try:
            await self._require().fs.upload_file(data if isinstance(data, bytes) else str(data), remote)
        except Exception as exc:
            raise InfraError(f"upload to Daytona sandbox {self._id}: {exc}") from exc

    async def put(self, local: Path, remote: str) -> None:
        local = self._put_source(local)

        async def upload(path: str) -> None:
            with tempfile.TemporaryDirectory() as spool:
                archive = Path(spool) / "put.tar"
                await asyncio.to_thread(_spool, pack(local, remote), archive)
                await self._upload(archive, path)

        await put_by_upload(self, local, remote, upload)

    async def get(self, remote: str, local: Path) -> CopyReport:
        name = PurePosixPath(remote)
        path = f"/tmp/.bf-get-{secrets.token_hex(8)}.tar"
        made = await self.exec(tar_of(name, 'tar -cf "$4" -C "$2" "$3"', path), cwd="/")
        if made.return_code == GONE_RC:
            raise gone(remote)
        if not made.success:
            raise InfraError(f"get {remote}: {made.stderr.strip()[-300:]}")
        try:
            with tempfile.TemporaryDirectory() as spool:
                target = Path(spool) / "archive.tar"
                await self._require().fs.download_file(path, str(target))
                return await asyncio.to_thread(
                    lambda: copy_out_tar(file_chunks(target), name.name, Path(local)))
        except (FileNotFoundError, InfraError):
            raise
        except Exception as exc:
            raise InfraError(f"get {remote} from Daytona sandbox {self._id}: {exc}") from exc
        finally:
            await self._run_line(f"rm -f {path} < /dev/null", timeout=30)

    async def snapshot(self, *, retain: bool = False) -> str:
        """A Daytona snapshot of the filesystem (:mod:`.daytona.snapshots`), deleted by ``stop()``
        unless ``retain``."""
        from .snapshots import snapshot_name

        box, name = self._require(), snapshot_name(retain=retain)
        if not retain:
            self._snapshots.append(name)
        try:
            await box.create_snapshot(name, timeout=START_TIMEOUT_SEC)
        except Exception as exc:
            raise InfraError(f"snapshot of Daytona sandbox {self._id}: {exc}") from exc
        return name

    async def restore(self, ref: str) -> None:
        """A new sandbox started from the snapshot ``ref`` takes this one's place (which is deleted);
        before ``start()``, the sandbox starts straight from it."""
        self._refuse_if_stopped()
        old = self._id if self._box is not None else None
        self._box = None
        await self._bring_up(lambda: self._create(snapshot=ref), self._setup)
        if old is not None:
            from .backend import BACKEND

            await asyncio.to_thread(BACKEND.remove, [old])

    async def keep(self) -> dict[str, object]:
        """Keep the sandbox after this run (``--keep-sandbox``): labelled kept, so cleanup leaves it;
        ``stop()`` then only lets go of it. Returns the fields of ``kept-sandbox.json`` but ``trial``
        and ``created_at``."""
        from .backend import NAME
        from .kept import KEPT

        box = self._require()
        self.labels[KEPT] = "true"
        try:
            await box.set_labels(self.labels)
        except Exception as exc:
            raise InfraError(f"labelling Daytona sandbox {self._id} kept: {exc}") from exc
        self._kept = True
        return {"schema_version": 1, "backend": NAME, "sandbox_id": self._id}

    async def _stop_all(self) -> None:
        self._stopped = True
        if self._id is not None and not self._kept:
            from .backend import BACKEND

            gone = await asyncio.to_thread(BACKEND.remove, [self._id])
            if gone:
                log.warning("could not delete Daytona sandbox %s: %s (bench sandbox cleanup removes it)",
                            self._id, gone[self._id])
        if self._snapshots:
            from .backend import BACKEND

            stayed = await asyncio.to_thread(BACKEND.remove_snapshots, self._snapshots)
            for name, why in stayed.items():
                log.warning("could not delete Daytona snapshot %s: %s (bench sandbox cleanup removes it)", name, why)
        if self._client is not None:
            try:
                await self._client.close()
            except Exception:  # noqa: BLE001, S110 - closing a client of a deleted sandbox may fail; nothing is left
                pass


def _spool(handle, target: Path) -> None:
    """Write the file object ``handle`` to ``target`` and close it."""
    with handle, target.open("wb") as out:
        shutil.copyfileobj(handle, out, 1 << 20)
