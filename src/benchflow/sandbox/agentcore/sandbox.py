"""One AgentCore runtime and one session in it for one trial, through ``boto3``.

``build`` makes the image and pushes it to ECR (:mod:`.agentcore.image`);
``start`` creates the runtime (CreateAgentRuntime: the image, the execution
role, network mode ``PUBLIC``, the owner labels as tags) and learns its id
before anything else can fail, so a failed or cancelled start deletes it; it
waits for ``READY`` (GetAgentRuntime, with a deadline), then runs the docker
backend's setup script in the session. Every command is one
``InvokeAgentRuntimeCommand`` in the sandbox's session (:mod:`.agentcore.commands`)
with the shell lines of :mod:`.marked_commands`: a per-exec marker, so a
timeout kills the command's whole tree; stdin from a file uploaded first; a
non-root user through ``su``. Files go as one tar, base64 in commands
(``put``) or base64 on a command's stdout (``get``). ``stop`` deletes the runtime.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import secrets
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from benchflow.errors import BuildError, CapabilityError, InfraError

from . import commands as ac
from .. import marked_commands as cmds
from ..base import DEFAULT_OUTPUT_CAP_BYTES, Capabilities, ExecResult, SandboxSpec
from ..copyout import CopyReport, copy_out_tar
from ..one_container import OneContainerSandbox
from ..remote_common import (
    DRAIN_AFTER_KILL_SEC,
    GONE_RC,
    capped_result,
    chunks_of,
    gone,
    put_by_upload,
    stdin_file,
    tar_of,
)
from ..tarstream import pack

log = logging.getLogger(__name__)

READY_TIMEOUT_SEC = 600.0
POLL_SEC = 0.2
POLL_MAX_SEC = 5.0


class AgentCoreSandbox(OneContainerSandbox):
    """See the module docstring. ``labels`` are the owner labels written on the runtime as tags."""

    KIND = "the AgentCore sandbox"
    DOC = "docs/agentcore.md"
    NO_MOUNTS = "it runs in AWS"

    def __init__(self, spec: SandboxSpec, *, capabilities: Capabilities, labels: Mapping[str, str]) -> None:
        super().__init__(spec, capabilities=capabilities, labels=labels)
        self._uri: str | None = None
        self._arn: str | None = None
        self._session = ac.session_id()
        self._data = None
        self._ready = False
        slug = re.sub(r"[^a-zA-Z0-9]+", "_", spec.name)[:30]
        self.name = f"bf_{slug}_{secrets.token_hex(4)}"

    def _refuse_what_it_cannot_do(self) -> None:
        super()._refuse_what_it_cannot_do()
        if self.spec.gpus:
            raise CapabilityError(f"{self.spec.name}: AgentCore runtimes have no GPUs")

    def _network_reason(self) -> str:
        from .backend import NETWORK_REASON

        return f": {NETWORK_REASON}"

    async def build(self) -> None:
        if self._uri is not None:
            return
        self._refuse_what_it_cannot_do()
        from .image import container_uri

        self._uri = await container_uri(self.spec)

    def _started(self) -> bool:
        return self._ready

    def _request(self) -> dict:
        """The CreateAgentRuntime request (without the id the call returns)."""
        from .backend import aws_tags, settings

        return {"agentRuntimeName": self.name,
                "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": self._uri}},
                "roleArn": settings()[1], "networkConfiguration": {"networkMode": "PUBLIC"},
                "description": f"BenchFlow sandbox for {self.spec.name}"[:4096],
                "environmentVariables": dict(self.spec.env) or None,
                "lifecycleConfiguration": {"idleRuntimeSessionTimeout": 3600, "maxLifetime": 28800},
                "tags": aws_tags(self.labels)}

    async def _create(self) -> None:
        from .backend import client

        control = await asyncio.to_thread(client, "bedrock-agentcore-control")
        self._data = await asyncio.to_thread(client, "bedrock-agentcore")
        request = {k: v for k, v in self._request().items() if v is not None}
        creating = asyncio.ensure_future(asyncio.to_thread(control.create_agent_runtime, **request))
        try:
            made = await asyncio.shield(creating)
        except asyncio.CancelledError:  # learn the id anyway, so that stop() deletes what was made
            made = (await asyncio.gather(creating, return_exceptions=True))[0]
            if isinstance(made, dict):
                self._id = made["agentRuntimeId"]
            raise
        self._id, self._arn = made["agentRuntimeId"], made["agentRuntimeArn"]
        deadline = time.monotonic() + READY_TIMEOUT_SEC
        delay = POLL_SEC
        while True:
            found = await asyncio.to_thread(control.get_agent_runtime, agentRuntimeId=self._id)
            if found["status"] == "READY":
                break
            if found["status"].endswith("FAILED") or time.monotonic() > deadline:
                raise BuildError(f"{self.spec.name}: the AgentCore runtime did not become READY "
                                 f"({found['status']}): {found.get('failureReason') or 'no reason given'}")
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, POLL_MAX_SEC)
        self._ready = True

    async def _image_workdir(self) -> str | None:
        """Where a command starts: the image's WORKDIR."""
        return (await ac.run_line(self, "pwd < /dev/null", timeout=60))[1].strip() or None

    def _require(self) -> None:
        if not self._ready or self._stopped:
            raise self._not_running()

    async def kill(self, marker: str) -> None:
        """Kill every process of the exec ``marker`` (its whole tree, setsid children too)."""
        await ac.run_line(self, cmds.kill_line(marker), timeout=30)

    async def exec(self, cmd: list[str], *, user: str | None = None, env: Mapping[str, str] | None = None,
                   cwd: str | None = None, timeout: float | None = None, stdin: bytes | None = None,
                   output_cap: int = DEFAULT_OUTPUT_CAP_BYTES) -> ExecResult:
        self._require()
        marker = secrets.token_hex(8)
        words = cmds.argv(cmd, cwd=cwd or self.workdir, env=env, user=user)
        stdin_path = await stdin_file(stdin, marker, lambda data, path: ac.upload(self, data, path))
        out: list[str] = []
        err: list[str] = []
        line = cmds.command_line(words, marker, stdin_path=stdin_path)
        if stdin_path is not None:
            line += f"; rc=$?; rm -f {stdin_path}; exit $rc"
        command = ac.Command(self, line, timeout=None if timeout is None else timeout + 30,
                             on_output=lambda name, text: (out if name == "stdout" else err).append(text))
        running = asyncio.ensure_future(command.run())
        try:
            code = await asyncio.wait_for(asyncio.shield(running), timeout)
        except TimeoutError:
            code = None
            await self.kill(marker)
            try:
                await asyncio.wait_for(asyncio.shield(running), DRAIN_AFTER_KILL_SEC)
            except TimeoutError:
                command.close()
        except asyncio.CancelledError:
            command.close()
            raise
        await asyncio.sleep(0)
        return capped_result(None if command.status == "TIMED_OUT" else code, "".join(out), "".join(err),
                             cap=output_cap, timeout=timeout)

    async def exec_stream(self, cmd: list[str], *, user: str | None = None,
                          env: Mapping[str, str] | None = None, cwd: str | None = None):
        from .stream import open_process

        self._require()
        return await open_process(self, cmds.argv(cmd, cwd=cwd or self.workdir, env=env, user=user))

    async def put(self, local: Path, remote: str) -> None:
        local = self._put_source(local)
        self._require()

        async def upload(path: str) -> None:
            with pack(local, remote) as archive:
                data = await asyncio.to_thread(archive.read)
            await ac.upload(self, data, path)

        await put_by_upload(self, local, remote, upload)

    async def get(self, remote: str, local: Path) -> CopyReport:
        self._require()
        name = PurePosixPath(remote)
        line = cmds.command_line(tar_of(name, 'tar -cf - -C "$2" "$3" | base64'), secrets.token_hex(8))
        with tempfile.TemporaryFile() as spool:
            pending = [""]

            def feed(stream: str, text: str) -> None:
                if stream != "stdout":
                    return
                lines = (pending[0] + text).split("\n")
                pending[0] = lines.pop()
                spool.write(base64.b64decode("".join(lines)))

            code = await ac.Command(self, line, timeout=None, on_output=feed).run()
            await asyncio.sleep(0)
            if code == GONE_RC:
                raise gone(remote)
            if code != 0:
                raise InfraError(f"get {remote} from AgentCore runtime {self._id}: exit {code}")
            spool.write(base64.b64decode(pending[0]))
            spool.seek(0)
            return await asyncio.to_thread(lambda: copy_out_tar(chunks_of(spool), name.name, Path(local)))

    async def snapshot(self, *, retain: bool = False) -> str:
        raise CapabilityError("the AgentCore sandbox has no snapshots")

    async def restore(self, ref: str) -> None:
        raise CapabilityError("the AgentCore sandbox has no snapshots")

    async def _stop_all(self) -> None:
        self._stopped = True
        if self._id is not None:
            from .backend import BACKEND

            stayed = await asyncio.to_thread(BACKEND.remove, [self._id])
            if stayed:
                log.warning("could not delete AgentCore runtime %s: %s (bench sandbox cleanup removes it)",
                            self._id, stayed[self._id])
