"""The one way BenchFlow talks to a Hugging Face Hub: endpoint and token from the environment.

``huggingface_hub`` reads ``HF_ENDPOINT`` once, when it is imported; reading it
here on every call lets a process (and a test) point at another Hub. The token
comes only from ``HF_TOKEN``: it is never taken from a command line, never
written to disk, and the library's stored-login fallback is switched off
(``token=False`` when the variable is unset), so what a run sends is what the
environment says.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchflow.errors import BenchError, UserError

DEFAULT_ENDPOINT = "https://huggingface.co"
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


class HubError(BenchError):
    """The Hub refused or failed a request (not the user's input); exit 1."""

    category = "hf_hub_error"


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def token() -> str | bool:
    """``HF_TOKEN``, or False: never the library's stored login."""
    return os.environ.get("HF_TOKEN") or False


def check_repo_id(repo_id: str, what: str) -> str:
    """Refuse anything but ``org/name`` (exit 2)."""
    if not REPO_ID.match(repo_id or ""):
        raise UserError(f"{what} {repo_id!r}: not a Hugging Face repo id; give org/name, e.g. benchflow/tasks")
    return repo_id


def api(*, anonymous: bool = False) -> Any:
    """An ``HfApi`` for :func:`endpoint`, with :func:`token` (or none when ``anonymous``)."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint(), token=False if anonymous else token())


@contextmanager
def hub_errors(what: str) -> Iterator[None]:
    """Turn the library's errors into one line naming ``what`` and a fix."""
    from huggingface_hub import errors as hf

    try:
        yield
    except hf.LocalEntryNotFoundError:
        raise HubError(f"{what}: cannot reach {endpoint()} and it is not in the cache; check the network "
                       "or HF_ENDPOINT") from None
    except hf.RevisionNotFoundError:
        raise UserError(f"{what}: no such revision on {endpoint()}; pass a branch, tag or commit "
                        "that exists with --ref") from None
    except hf.EntryNotFoundError:
        raise UserError(f"{what}: no such file on {endpoint()}") from None
    except hf.RepositoryNotFoundError:
        hint = "set HF_TOKEN for a private or gated repo" if not token() else "check the repo id and HF_TOKEN's access"
        raise UserError(f"{what}: repository not found on {endpoint()} ({hint})") from None
    except hf.HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        if status in (401, 403):
            raise UserError(f"{what}: the Hub refused access ({status}); set HF_TOKEN to a token "
                            "with access to it") from None
        raise HubError(f"{what}: the Hub answered {status}: {_first_line(exc)}") from None
    except Exception as exc:
        if any(k.__name__ in _NETWORK_ERRORS for k in type(exc).__mro__):
            raise HubError(f"{what}: cannot reach {endpoint()} ({_first_line(exc)}); check the network "
                           "or HF_ENDPOINT") from None
        raise


_NETWORK_ERRORS = frozenset({"ConnectError", "TimeoutException", "NetworkError", "RemoteProtocolError"})
"""httpx's transport errors, matched by name (huggingface_hub ships its own httpx build)."""


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
