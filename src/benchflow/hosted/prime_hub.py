"""Prime Intellect's Environments Hub over HTTP, as the ``prime`` CLI talks to it.

``GET {base}/api/v1/environmentshub/{owner}/{name}/@{version|latest}`` answers the version's details
(``{"data": {...}}``): ``simple_index_url`` (a PEP 503 index, ``pip install <name>==<version>
--extra-index-url`` it), ``wheel_url``, ``visibility``, ``metadata``. The base is ``$PRIME_API_BASE_URL``
(or ``$PRIME_BASE_URL``, as the prime CLI reads them), else Prime's API; ``$PRIME_API_KEY``, when set, is
sent as the bearer token (private environments) and is never written anywhere.
"""

from __future__ import annotations

import io
import os
import zipfile
from email.parser import HeaderParser
from typing import Any

from benchflow.errors import ConfigError

from . import HostedEnvError
from .ref import HostedRef

DEFAULT_API_BASE = "https://api.primeintellect.ai"
TIMEOUT_SEC = 60.0
MAX_WHEEL_BYTES = 256 * 1024 * 1024


def api_base() -> str:
    base = (os.environ.get("PRIME_API_BASE_URL") or os.environ.get("PRIME_BASE_URL") or DEFAULT_API_BASE).rstrip("/")
    return base.removesuffix("/api/v1")


def _headers() -> dict[str, str]:
    key = os.environ.get("PRIME_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


def details(ref: HostedRef) -> dict[str, Any]:
    """The hub's details of ``ref``'s version.

    Raises:
        ConfigError: the hub does not know the environment or version (404).
        HostedEnvError: the hub cannot be reached or answers something else.
    """
    import httpx

    url = f"{api_base()}/api/v1/environmentshub/{ref.owner}/{ref.name}/@{ref.version or 'latest'}"
    try:
        response = httpx.get(url, headers=_headers(), timeout=TIMEOUT_SEC, follow_redirects=True)
    except httpx.HTTPError as exc:
        raise HostedEnvError(f"{ref.label}: the Environments Hub at {api_base()} cannot be reached ({exc})") from None
    if response.status_code == 404:
        raise ConfigError(f"{ref.label}: the Environments Hub at {api_base()} has no such environment "
                          "or version; 'bench hub list --provider primeintellect' lists them")
    if response.status_code in (401, 403):
        raise HostedEnvError(f"{ref.label}: the Environments Hub refused access (HTTP {response.status_code}); "
                             "a private environment needs PRIME_API_KEY set")
    if response.status_code != 200:
        raise HostedEnvError(f"{ref.label}: the Environments Hub answered HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        raise HostedEnvError(f"{ref.label}: the Environments Hub answered something that is not JSON") from None
    found = body.get("data", body) if isinstance(body, dict) else None
    if not isinstance(found, dict):
        raise HostedEnvError(f"{ref.label}: the Environments Hub's answer holds no environment details")
    if not (found.get("simple_index_url") or found.get("wheel_url")):
        raise HostedEnvError(f"{ref.label}: the hub offers no package to install for this version "
                             f"(visibility {found.get('visibility') or 'unknown'}); 'prime env pull' fetches a "
                             "private environment's source")
    return found


def download_wheel(ref: HostedRef, found: dict[str, Any]) -> bytes:
    """The version's wheel (``wheel_url`` of its details), at most :data:`MAX_WHEEL_BYTES`.

    Raises:
        HostedEnvError: no wheel URL, or the download failed.
    """
    import httpx

    url = found.get("wheel_url")
    if not url:
        raise HostedEnvError(f"{ref.label}: the hub's details name no wheel to read files from")
    data = bytearray()
    try:
        with httpx.stream("GET", url, headers=_headers(), timeout=TIMEOUT_SEC, follow_redirects=True) as response:
            if response.status_code != 200:
                raise HostedEnvError(f"{ref.label}: downloading {url} answered HTTP {response.status_code}")
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_WHEEL_BYTES:
                    raise HostedEnvError(f"{ref.label}: the wheel at {url} is over {MAX_WHEEL_BYTES >> 20} MiB")
    except httpx.HTTPError as exc:
        raise HostedEnvError(f"{ref.label}: downloading {url} failed ({exc})") from None
    return bytes(data)


def wheel_file(ref: HostedRef, wheel: bytes, path: str) -> bytes:
    """``path`` inside the wheel; ``README.md`` not packed as a file is the description the wheel's
    METADATA carries (what ``readme =`` in its pyproject.toml put there).

    Raises:
        ConfigError: no such file (the message lists what the wheel holds).
        HostedEnvError: not a wheel.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(wheel))
    except zipfile.BadZipFile:
        raise HostedEnvError(f"{ref.label}: the hub's wheel is not a zip archive") from None
    names = [n for n in archive.namelist() if not n.endswith("/")]
    wanted = path.strip("/")
    if wanted in names:
        return archive.read(wanted)
    if wanted.lower() in ("readme.md", "readme"):
        metadata = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
        if metadata is not None:
            message = HeaderParser().parsestr(archive.read(metadata).decode("utf-8", "replace"))
            body = message.get_payload()
            if isinstance(body, str) and body.strip():
                return body.encode()
    shown = ", ".join(n for n in names if ".dist-info/" not in n)
    raise ConfigError(f"--path {path!r}: {ref.label}'s package holds no such file; it holds: {shown}")
