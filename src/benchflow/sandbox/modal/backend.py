"""The ``modal`` backend: sandboxes in Modal's cloud, through the ``modal`` SDK.

Credentials come from the environment only: ``MODAL_TOKEN_ID`` and
``MODAL_TOKEN_SECRET`` are handed to ``modal.Client.from_credentials`` (never
the SDK's ``~/.modal.toml`` profiles, never a command line); ``MODAL_SERVER_URL``
and ``MODAL_ENVIRONMENT`` are the SDK's own settings. Every sandbox belongs to
one Modal app (``BENCHFLOW_MODAL_APP``, default ``benchflow``) and carries the
owner labels of the docker backend as Modal sandbox tags plus
``benchflow.backend=modal``, so ``leftovers`` finds what a killed run left with
one ``Sandbox.list(tags=…)`` and ``remove`` terminates it; ``every_sandbox``
(``bench sandbox list --all``) lists every sandbox of the Modal environment,
in every app, those BenchFlow did not make too.

What it can do (see docs/modal.md): ``no-network`` is Modal's
``block_network``, ``public`` its default; ``allowlist`` is refused (the
trial's egress proxy is reached over a host socket mount, which a cloud
sandbox has not, and Modal's allow lists take CIDRs and domains, not the
proxy). Images are built by Modal from the task's Dockerfile or a prebuilt
image; cpus and memory are Modal's requests and limits; GPUs are Modal GPUs.
Snapshots are Modal filesystem snapshots (images with a time to live; Modal
has no call to delete one, so none outlives its TTL on purpose and
``retained_snapshots`` is off). No host mounts, multi-service pods or kept sandboxes.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from benchflow.errors import SandboxUnavailable

from .. import docker_engine as eng
from ..base import Backend, Capabilities, OwnedSandbox, SandboxSpec
from ..remote_common import carries, first_line, owned_row, owner_labels, wanted_labels

T = TypeVar("T")

NAME = "modal"
ID_ENV = "MODAL_TOKEN_ID"
SECRET_ENV = "MODAL_TOKEN_SECRET"
URL_ENV = "MODAL_SERVER_URL"
APP_ENV = "BENCHFLOW_MODAL_APP"
DEFAULT_APP = "benchflow"
SNAPSHOT_TTL_SEC = 24 * 3600
"""How long Modal keeps a filesystem snapshot (an image); BenchFlow cannot delete one sooner."""


def credentials() -> tuple[str, str]:
    """(token id, token secret) from the environment.

    Raises:
        SandboxUnavailable: either is missing.
    """
    token_id = os.environ.get(ID_ENV, "").strip()
    secret = os.environ.get(SECRET_ENV, "").strip()
    if not token_id or not secret:
        raise SandboxUnavailable(f"--sandbox {NAME} needs {ID_ENV} and {SECRET_ENV} in the environment "
                                 "(a Modal token: modal token new, or modal.com/settings/tokens)")
    return token_id, secret


def app_name() -> str:
    return os.environ.get(APP_ENV, "").strip() or DEFAULT_APP


def client():
    """The SDK's blocking client with the environment's token (the token is checked here)."""
    token_id, secret = credentials()  # first: without a token nothing imports the SDK
    import modal

    return modal.Client.from_credentials(token_id, secret)


async def aclient():
    """The same client for async callers."""
    token_id, secret = credentials()
    import modal

    return await modal.Client.from_credentials.aio(token_id, secret)


def off_loop(fn: Callable[[], T]) -> T:
    """Run ``fn`` (blocking SDK calls) here, or in a worker thread when this thread runs an event loop:
    the SDK's blocking interface must not be used from inside one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn()
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


def gpu_request(count: int, types: tuple[str, ...] | list[str] | None) -> str | None:
    """Modal's ``gpu`` string for a task's ``sandbox.gpus``/``gpu_types``: ``TYPE[:N]``; a task that names
    types but no count gets one; ``any`` when it names none (Modal picks)."""
    if not count and not types:
        return None
    kind = (types or ["any"])[0]
    count = max(1, count)
    return kind if count == 1 else f"{kind}:{count}"


def create_kwargs(spec: SandboxSpec, tags: Mapping[str, str], *, timeout_sec: int) -> dict[str, object]:
    """The keywords of ``modal.Sandbox.create`` for ``spec`` (image, app and client aside): cpu and memory as
    request and limit, ``block_network`` for ``no-network``, the owner tags, the task's env."""
    cpus = max(0.125, float(spec.cpus))
    memory = max(128, int(spec.memory_mb))
    kwargs: dict[str, object] = {
        "cpu": (cpus, cpus), "memory": (memory, memory), "timeout": int(timeout_sec),
        "block_network": spec.network_mode == "no-network", "tags": dict(tags), "env": dict(spec.env) or None,
    }
    gpu = gpu_request(spec.gpus, spec.gpu_types)
    if gpu:
        kwargs["gpu"] = gpu
    return kwargs


class ModalBackend(Backend):
    """See the module docstring."""

    name = NAME
    all_scope = ("every sandbox of the Modal environment (MODAL_ENVIRONMENT), in every app, and those BenchFlow "
                 "did not make (never removed by cleanup)")

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(network_modes=frozenset({"no-network", "public"}), snapshots=True,
                            retained_snapshots=False, start_from_snapshot=True, gpus=True,
                            multi_service=False, build_from_dockerfile=True, resource_limits=True,
                            host_mounts=False, image_layers=False, keep=False, exec_writes_persist=True)

    no_keep_reason = ("a Modal sandbox runs from the moment it is made until it is terminated (24 h at most), "
                      "so it cannot be made without starting it")
    no_cache_reason = ("keeps no cache BenchFlow can list: Modal caches the images it builds on its side and has "
                       "no call to list or delete them (its snapshots expire after a day)")

    def available(self) -> tuple[bool, str]:
        return off_loop(self._available)

    def _available(self) -> tuple[bool, str]:
        try:
            import modal  # noqa: F401
        except ImportError:
            return False, "the modal SDK is not installed (pip install 'benchflow[modal]')"
        where = os.environ.get(URL_ENV) or "api.modal.com"
        try:
            with client() as modal_client:
                _app(modal_client)  # None (not made yet) is fine: the token was accepted
        except SandboxUnavailable as exc:
            return False, str(exc)
        except Exception as exc:  # noqa: BLE001 - any failure means it does not work from here
            if type(exc).__name__ == "AuthError":
                return False, f"Modal at {where} refused {ID_ENV}/{SECRET_ENV}: {first_line(exc)}"
            return False, f"Modal at {where} does not answer: {first_line(exc)}"
        return True, f"Modal at {where} (app {app_name()})"

    def configured(self) -> bool:
        return bool(os.environ.get(ID_ENV, "").strip() and os.environ.get(SECRET_ENV, "").strip())

    def create(self, spec: SandboxSpec):
        from .sandbox import ModalSandbox

        return ModalSandbox(spec, capabilities=self.capabilities, labels=owner_labels(spec, NAME))

    def exists(self, sandbox_id: str) -> bool:
        return off_loop(lambda: self._exists(sandbox_id))

    def _exists(self, sandbox_id: str) -> bool:
        import modal

        with client() as modal_client:
            try:
                return modal.Sandbox.from_id(sandbox_id, client=modal_client).poll() is None
            except modal.exception.NotFoundError:
                return False

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        return off_loop(lambda: self._leftovers(owner))

    def _leftovers(self, owner: str | None) -> list[OwnedSandbox]:
        wanted = wanted_labels(NAME, owner)

        def ours(modal_client, modal) -> list[OwnedSandbox]:
            app = _app(modal_client)
            if app is None:
                return []  # no sandbox was ever made in this app
            return [_row(box.object_id, tags, f"modal app {app_name()}")
                    for box in modal.Sandbox.list(app_id=app.app_id, tags=wanted, client=modal_client)
                    if carries(tags := box.get_tags(), wanted)]

        return _listing(ours)

    def every_sandbox(self) -> list[OwnedSandbox]:
        return off_loop(lambda: _listing(_every))

    def remove(self, ids: list[str]) -> dict[str, str]:
        return off_loop(lambda: self._remove(ids))

    def _remove(self, ids: list[str]) -> dict[str, str]:
        try:
            modal_client = client()
        except SandboxUnavailable as exc:
            return {sandbox_id: str(exc) for sandbox_id in ids}
        import modal

        stayed: dict[str, str] = {}
        with modal_client:
            for sandbox_id in ids:
                try:
                    modal.Sandbox.from_id(sandbox_id, client=modal_client).terminate()
                except modal.exception.NotFoundError:
                    continue
                except Exception as exc:  # noqa: BLE001
                    stayed[sandbox_id] = first_line(exc)
        return stayed


def _app(modal_client):
    """The Modal app every BenchFlow sandbox belongs to; None before its first sandbox made it (looking
    does not make it)."""
    import modal

    try:
        return modal.App.lookup(app_name(), client=modal_client)
    except modal.exception.NotFoundError:
        return None


def _listing(ask: Callable) -> list[OwnedSandbox]:
    """``ask(client, modal)``'s rows; none without a token, and any other failure one line."""
    try:
        with client() as modal_client:
            import modal

            return ask(modal_client, modal)
    except SandboxUnavailable:
        return []
    except Exception as exc:
        raise SandboxUnavailable(f"Modal sandboxes cannot be listed: {first_line(exc)}") from exc


def _every(modal_client, modal) -> list[OwnedSandbox]:
    """Every sandbox of the environment: BenchFlow's first, then those it did not make."""
    ours, rows = wanted_labels(NAME), []
    for box in modal.Sandbox.list(client=modal_client):
        tags = box.get_tags()
        rows.append(_row(box.object_id, tags, "modal") if carries(tags, ours) else OwnedSandbox(
            id=box.object_id, name=box.object_id, sandbox=NAME, engine="modal", state="running", image="-",
            created=0.0, job=None, trial=None, task=None, owner="not BenchFlow's", owner_alive=None, kept=False,
            foreign=True))
    return sorted(rows, key=lambda row: row.foreign)


def _row(sandbox_id: str, tags: dict[str, str], engine: str) -> OwnedSandbox:
    return owned_row(tags, alive=eng.owner_alive(tags), id=sandbox_id, name=sandbox_id, sandbox=NAME,
                     engine=engine, state="running", image="built",
                     created=eng.created_at(tags, time.time()) or 0.0, kept=False)


BACKEND = ModalBackend()
