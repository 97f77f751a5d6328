"""The ``daytona`` backend: sandboxes in Daytona's cloud, through the ``daytona`` SDK.

Credentials come from the environment only: ``DAYTONA_API_KEY`` and
``DAYTONA_API_URL`` (default ``https://app.daytona.io/api``). Every sandbox
carries the owner labels of the docker backend (``benchflow.owned``, job,
trial, owning pid and host) plus ``benchflow.backend=daytona``, so
``leftovers`` finds what a killed run left with one ``GET /sandbox?labels=…``
and ``remove`` deletes it. With ``BENCHFLOW_DAYTONA_OWNER`` set, every sandbox
also carries ``benchflow.owner=<it>``, and listing and cleanup see only that
owner's (several people or CI jobs on one account); ``every_sandbox`` (``bench
sandbox list --all``) lists the whole account, sandboxes BenchFlow did not make too.

What it can do (see docs/daytona.md): ``no-network`` is Daytona's
``networkBlockAll`` and ``public`` its default; ``allowlist`` is refused (the
trial's egress proxy is reached over a host socket mount, which a cloud
sandbox has not, and Daytona's own allow list takes CIDR ranges, not the
task's host names). Builds from the task's Dockerfile (Daytona builds them;
:mod:`.daytona.build`) or a prebuilt image; cpus and memory are Daytona's
quotas (whole CPUs, whole GiB). Snapshots are Daytona snapshots (:mod:`.daytona.snapshots`), and
the ones BenchFlow keeps are its ``cache`` (:mod:`.daytona.cache`). No host mounts,
GPUs or multi-service pods here. Kept sandboxes: :mod:`.daytona.kept`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import datetime

from benchflow.errors import SandboxUnavailable

from .. import docker_engine as eng
from ..base import Backend, CacheStore, Capabilities, OwnedSandbox, SandboxSpec
from ..remote_common import carries, first_line, owned_row, owner_labels, wanted_labels
from .kept import KEPT

NAME = "daytona"
KEY_ENV = "DAYTONA_API_KEY"
URL_ENV = "DAYTONA_API_URL"
OWNER_ENV = "BENCHFLOW_DAYTONA_OWNER"
OWNER_LABEL = "benchflow.owner"
DEFAULT_URL = "https://app.daytona.io/api"
REQUEST_TIMEOUT_SEC = 30


def settings() -> tuple[str, str]:
    """(API URL, API key) from the environment.

    Raises:
        SandboxUnavailable: no key.
    """
    key = os.environ.get(KEY_ENV, "").strip()
    if not key:
        raise SandboxUnavailable(f"--sandbox {NAME} needs {KEY_ENV} (and {URL_ENV} for a self-hosted Daytona)")
    return os.environ.get(URL_ENV, "").strip() or DEFAULT_URL, key


def owner() -> str | None:
    """This user's owner scope on the account (``BENCHFLOW_DAYTONA_OWNER``); None: every BenchFlow sandbox."""
    return os.environ.get(OWNER_ENV, "").strip() or None


def owner_scope() -> dict[str, str]:
    """The label every sandbox made here carries, and every listing asks for (none without an owner)."""
    return {OWNER_LABEL: name} if (name := owner()) else {}


def client():
    """The SDK's synchronous client (its generated REST APIs are ``_sandbox_api``, ``_object_storage_api``)."""
    url, key = settings()  # first: without a key nothing imports the SDK
    from daytona import Daytona, DaytonaConfig

    return Daytona(DaytonaConfig(api_key=key, api_url=url))


class DaytonaBackend(Backend):
    """See the module docstring."""

    name = NAME
    all_scope = (f"every sandbox on the Daytona account: of every {OWNER_ENV}, and those BenchFlow did not "
                 "make (never removed by cleanup)")

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(network_modes=frozenset({"no-network", "public"}), snapshots=True,
                            retained_snapshots=True, start_from_snapshot=True, gpus=False,
                            multi_service=False, build_from_dockerfile=True, resource_limits=True,
                            host_mounts=False, image_layers=False, keep=True)

    def available(self) -> tuple[bool, str]:
        try:
            import daytona  # noqa: F401
        except ImportError:
            return False, "the daytona SDK is not installed (pip install 'benchflow[daytona]')"
        try:
            url, _ = settings()
            client()._sandbox_api.list_sandboxes(limit=1, _request_timeout=REQUEST_TIMEOUT_SEC)
        except SandboxUnavailable as exc:
            return False, str(exc)
        except Exception as exc:  # noqa: BLE001 - any failure means it does not work from here
            if getattr(exc, "status", None) in (401, 403):
                return False, f"Daytona at {url} refused {KEY_ENV} (HTTP {exc.status})"
            return False, f"Daytona at {os.environ.get(URL_ENV) or DEFAULT_URL} does not answer: {first_line(exc)}"
        return True, f"Daytona at {url}"

    def configured(self) -> bool:
        return bool(os.environ.get(KEY_ENV, "").strip())

    def create(self, spec: SandboxSpec):
        from .sandbox import DaytonaSandbox

        return DaytonaSandbox(spec, capabilities=self.capabilities, labels=owner_labels(spec, NAME) | owner_scope())

    def _items(self, labels: dict[str, str]) -> list:
        """The sandboxes carrying ``labels`` (every one on the account when empty), gone ones left out."""
        import json

        api, items, cursor = client()._sandbox_api, [], None
        while True:
            page = api.list_sandboxes(labels=json.dumps(labels) if labels else None, cursor=cursor, limit=200,
                                      _request_timeout=REQUEST_TIMEOUT_SEC)
            items.extend(item for item in page.items if _state(item) not in ("destroyed", "destroying"))
            cursor = page.next_cursor
            if not cursor:
                return items

    def exists(self, sandbox_id: str) -> bool:
        from daytona_api_client.exceptions import NotFoundException

        try:
            box = client()._sandbox_api.get_sandbox(sandbox_id, _request_timeout=REQUEST_TIMEOUT_SEC)
        except NotFoundException:
            return False
        return _state(box) not in ("destroyed", "destroying")

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        """BenchFlow's sandboxes of this owner scope (:func:`owner_scope`), of job ``owner`` when given."""
        wanted = wanted_labels(NAME, owner) | owner_scope()
        return [_row(item) for item in self._listed(wanted) if carries(item.labels or {}, wanted)]

    def every_sandbox(self) -> list[OwnedSandbox]:
        ours = wanted_labels(NAME)
        items = self._listed({})
        return ([_row(item) for item in items if carries(item.labels or {}, ours)]
                + [_foreign(item) for item in items if not carries(item.labels or {}, ours)])

    def _listed(self, labels: dict[str, str]) -> list:
        try:
            return self._items(labels)
        except SandboxUnavailable:
            return []
        except Exception as exc:
            raise SandboxUnavailable(f"Daytona sandboxes cannot be listed: {first_line(exc)}") from exc

    def stale_snapshots(self, owner: str | None = None) -> list[str]:
        """Snapshots whose owning process is gone; none for one job (the job is not in the name)."""
        from .snapshots import stale

        if owner is not None:
            return []
        try:
            return stale(client())
        except SandboxUnavailable:
            return []
        except Exception as exc:
            raise SandboxUnavailable(f"Daytona snapshots cannot be listed: {first_line(exc)}") from exc

    @property
    def cache(self) -> CacheStore:
        """Its snapshots of this owner scope (:mod:`.daytona.cache`)."""
        from .cache import DaytonaCache

        return DaytonaCache(self, os.environ.get(URL_ENV, "").strip() or DEFAULT_URL)

    def remove_snapshots(self, refs: list[str]) -> dict[str, str]:
        from .snapshots import remove

        try:
            return remove(client(), refs)
        except SandboxUnavailable as exc:
            return {ref: str(exc) for ref in refs}

    async def create_kept(self, spec: SandboxSpec) -> dict[str, object]:
        from .kept import create_kept

        return await create_kept(self, spec, lambda: f"Daytona at {settings()[0]}")

    def attach(self, record: Mapping[str, object], command: list[str]) -> int:
        from .kept import attach

        return attach(record, command)

    def release(self, record: Mapping[str, object]) -> None:
        from .kept import release

        release(self, record)

    def remove(self, ids: list[str]) -> dict[str, str]:
        from daytona_api_client.exceptions import NotFoundException

        stayed: dict[str, str] = {}
        try:
            api = client()._sandbox_api
        except SandboxUnavailable as exc:
            return {sandbox_id: str(exc) for sandbox_id in ids}
        for sandbox_id in ids:
            try:
                api.delete_sandbox(sandbox_id, _request_timeout=REQUEST_TIMEOUT_SEC)
            except NotFoundException:
                continue
            except Exception as exc:  # noqa: BLE001
                stayed[sandbox_id] = first_line(exc)
        return stayed


def _state(item) -> str:
    return str(getattr(item.state, "value", item.state))


def _created(item) -> float | None:
    try:
        return datetime.fromisoformat(item.created_at).timestamp() if item.created_at else None
    except ValueError:
        return None


def _row(item) -> OwnedSandbox:
    labels = dict(item.labels or {})
    return owned_row(labels, alive=eng.owner_alive(labels), id=item.id, name=item.name, sandbox=NAME,
                     engine=f"daytona {item.target}", state=_state(item), image=item.snapshot or "built",
                     created=eng.created_at(labels, _created(item) or time.time()) or 0.0,
                     kept=labels.get(KEPT) == "true", account_owner=labels.get(OWNER_LABEL))


def _foreign(item) -> OwnedSandbox:
    """The row of a sandbox on the account that BenchFlow did not make."""
    return OwnedSandbox(id=item.id, name=item.name, sandbox=NAME, engine=f"daytona {item.target}",
                        state=_state(item), image=item.snapshot or "-", created=_created(item) or 0.0, job=None,
                        trial=None, task=None, owner="not BenchFlow's", owner_alive=None, kept=False,
                        foreign=True)


BACKEND = DaytonaBackend()
