"""Trusting the host's CA bundle inside builds and sandboxes.

Behind a TLS-intercepting proxy, package installs inside a build and tools
inside a sandbox fail certificate checks unless they trust the proxy's CA.
When a spec names a CA bundle, a copy of it goes into the image at
:data:`CA_PATH` right after every ``FROM`` (so ``RUN`` steps see it), and the
usual variables point at it: OpenSSL, requests, pip, Node and curl.

The bundle is a full one (the host's, which holds the public roots plus the
proxy's), so pointing ``SSL_CERT_FILE`` at it replaces nothing a tool needs.
"""

from __future__ import annotations

import re
from pathlib import Path

from benchflow.errors import ConfigError

from . import dockerfile_lines

CA_PATH = "/usr/local/share/ca-certificates/benchflow-ca.crt"
CONTEXT_NAME = ".benchflow-ca.crt"
"""Name of the bundle's copy inside the build context."""

ENV_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE")

_FROM = re.compile(r"^\s*FROM\s", re.IGNORECASE)


def ca_env() -> dict[str, str]:
    """The environment that makes common tools trust :data:`CA_PATH`."""
    return {name: CA_PATH for name in ENV_VARS}


def read_bundle(path: Path) -> bytes:
    """The bundle's bytes.

    Raises:
        ConfigError: the file is missing or holds no PEM certificate.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the CA bundle ({exc.strerror}); "
                          "point --ca-bundle at a PEM file") from exc
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise ConfigError(f"{path}: not a PEM CA bundle (no BEGIN CERTIFICATE line); "
                          "point --ca-bundle at a PEM file")
    return data


def inject(dockerfile: str) -> str:
    """``dockerfile`` with the bundle copied in and trusted after each ``FROM`` instruction
    (its continuation lines kept with it; a heredoc's ``from …`` line is no ``FROM``)."""
    env = " ".join(f"{name}={CA_PATH}" for name in ENV_VARS)
    added = [f"COPY {CONTEXT_NAME} {CA_PATH}", f"ENV {env}"]
    out: list[str] = []
    for group in dockerfile_lines.instructions(dockerfile):
        out.extend(group)
        if _FROM.match(group[0]):
            out.extend(added)
    return "\n".join(out) + "\n"


_TLS_FAILURES = ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "SSL certificate problem",
                 "unable to get local issuer certificate", "self-signed certificate in certificate chain")


def proxy_hint(log: str, ca_bundle: Path | None) -> str:
    """A one-line fix when a build failed on a TLS check and no CA bundle was trusted; else ""."""
    if ca_bundle is not None or not any(marker in log for marker in _TLS_FAILURES):
        return ""
    return ("a TLS certificate check failed during the build: behind a TLS-intercepting proxy, "
            "rerun with --ca-bundle host")
