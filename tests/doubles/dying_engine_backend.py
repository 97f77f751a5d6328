"""TEST DOUBLE: a sandbox backend whose engine dies after the sandbox starts.

Every ``exec`` raises the connection error the Docker SDK raises when the
engine goes away mid-run, so the run engine's handling of a dead engine can be
checked without killing the machine's real engine.
"""

from __future__ import annotations

from pathlib import Path

from benchflow.sandbox.base import Backend, Capabilities, OwnedSandbox, SandboxSpec


class DeadEngine(ConnectionError):
    pass


class DyingSandbox:
    capabilities = Capabilities(network_modes=frozenset({"no-network", "public"}))

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self.stopped = False

    @property
    def sandbox_id(self) -> str:
        return "dying-1"

    @property
    def workdir(self) -> str:
        return "/app"

    async def build(self) -> None:
        return None

    async def start(self) -> None:
        return None

    async def exec(self, cmd, **_kw):
        raise DeadEngine("('Connection aborted.', ConnectionRefusedError(111, 'Connection refused'))")

    async def exec_stream(self, cmd, **_kw):
        raise DeadEngine("Connection refused")

    async def put(self, local: Path, remote: str) -> None:
        return None

    async def get(self, remote: str, local: Path) -> None:
        raise DeadEngine("Connection refused")

    async def stop(self) -> None:
        self.stopped = True


class DyingBackend(Backend):
    name = "dying"
    capabilities = DyingSandbox.capabilities

    def available(self) -> tuple[bool, str]:
        return True, "test double"

    def create(self, spec: SandboxSpec) -> DyingSandbox:
        return DyingSandbox(spec)

    def exists(self, sandbox_id: str) -> bool:
        return False  # nothing of it is ever on the machine

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        return []

    def remove(self, ids: list[str]) -> dict[str, str]:
        return {}


BACKEND = DyingBackend()
