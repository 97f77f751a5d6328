"""Talking to a hub from the CLI: its address (``--hub`` / ``$BENCHFLOW_HUB_URL``), the token, errors.

The token is read from ``$BENCHFLOW_HUB_TOKEN`` only (never a flag, so it is
never on a command line or in shell history). A hub's refusal comes back as
``{"error": "..."}`` and is raised as a one-line :class:`HubRefused` (exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx

from benchflow.errors import UserError

TOKEN_ENV = "BENCHFLOW_HUB_TOKEN"
URL_ENV = "BENCHFLOW_HUB_URL"
TIMEOUT = httpx.Timeout(30.0, read=600.0, write=600.0)


class HubRefused(UserError):
    """The hub answered with an error (bad token, schema error, republish, …)."""

    category = "hub_refused"


def hub_url(flag: str | None) -> str:
    """``--hub``, else ``$BENCHFLOW_HUB_URL``.

    Raises:
        UserError: neither is set, or it is not an http(s) URL (exit 2).
    """
    url = (flag or os.environ.get(URL_ENV) or "").strip()
    if not url:
        raise UserError(f"no hub given: pass --hub URL or set {URL_ENV}")
    if not url.startswith(("http://", "https://")):
        raise UserError(f"--hub {url!r}: give the hub's http:// or https:// address")
    return url.rstrip("/")


class HubClient:
    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self._token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._http = httpx.Client(base_url=url, timeout=TIMEOUT, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HubClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _headers(self, write: bool) -> dict[str, str]:
        if not write:
            return {}
        if not self._token:
            raise UserError(f"{TOKEN_ENV} is not set: writing to a hub needs an API token (its admin makes one "
                            "with bench hub serve --create-token USER)")
        return {"authorization": f"Bearer {self._token}"}

    def request(self, method: str, path: str, *, write: bool = False, ok: tuple[int, ...] = (200, 201, 202),
                **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, headers=self._headers(write), **kwargs)
        except httpx.HTTPError as exc:
            raise UserError(f"cannot reach the hub at {self.url} ({type(exc).__name__}: {exc}); check --hub "
                            f"or {URL_ENV}") from exc
        if response.status_code not in ok:
            raise HubRefused(f"the hub refused {method} {path.split('?')[0]} (HTTP {response.status_code}): "
                             f"{_error_text(response)}")
        return response

    def get_json(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs).json()

    def upload(self, method: str, path: str, file: Path, **kwargs: Any) -> httpx.Response:
        with file.open("rb") as handle:
            return self.request(method, path, write=True, content=_chunks(handle), **kwargs)


def _chunks(handle: IO[bytes]) -> Iterator[bytes]:
    while chunk := handle.read(1 << 20):
        yield chunk


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    return str(body.get("error") if isinstance(body, dict) else body)
