"""What a failed agent install says: its cause from the install log, and whether a retry can help.

An install whose script exits non-zero fails the same way next time (a missing
package, a TLS-intercepting proxy, a broken recipe), so it is not retried; one
that timed out or lost the engine may succeed again and keeps the ordinary
``install_failure`` retry. The one-line error carries the log's last meaningful
line (the engine's own "returned a non-zero code" line says nothing), and, when
the log shows a certificate failure and no CA bundle was trusted, the fix.
"""

from __future__ import annotations

import re
from pathlib import Path

from benchflow.sandbox.ca import proxy_hint

DETERMINISTIC = "the install exited with code"
"""Phrase in the error of an install whose script exited non-zero (never retried)."""

LOG_NAME = "agent/install-stdout.txt"

_EXIT = (re.compile(r"returned a non-zero code: (\d+)"), re.compile(r"failed with exit code (\d+)"),
         re.compile(r"exit code: (\d+)"))
_NOISE = (re.compile(r"^The command .* returned a non-zero code"), re.compile(r"^Step \d+/\d+ : "),
          re.compile(r"^---> "), re.compile(r"^Removing intermediate container"), re.compile(r"^Running in [0-9a-f]+$"),
          re.compile(r"^ERROR: The command "), re.compile(r"^--- stderr ---$"),
          re.compile(r"^npm (ERR!|error) (A complete log of this run|$)"), re.compile(r"^npm (ERR!|error)\s*$"),
          re.compile(r"\.npm/_logs/.*-debug-\d+\.log$"), re.compile(r"^process .* did not complete successfully"))
_TLS = ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "SSL certificate problem",
        "unable to get local issuer certificate", "self-signed certificate in certificate chain",
        "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "SELF_SIGNED_CERT_IN_CHAIN")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MAX_CAUSE = 300


def exit_code(message: str) -> int | None:
    """The install step's exit code named in an engine's build error, if it names one."""
    for pattern in _EXIT:
        found = pattern.search(message)
        if found:
            return int(found.group(1))
    return None


def install_cause(log: str) -> str:
    """The line of ``log`` that says why the install failed: the last one naming a certificate
    failure, else the last line that is not the engine's or npm's bookkeeping ("" if none)."""
    lines = [_ANSI.sub("", line).strip() for line in log.splitlines()]
    meaningful = [line for line in lines if line and not any(p.search(line) for p in _NOISE)]
    tls = [line for line in meaningful if any(marker in line for marker in _TLS)]
    chosen = (tls or meaningful or [""])[-1]
    return chosen if len(chosen) <= _MAX_CAUSE else chosen[:_MAX_CAUSE - 1] + "…"


def install_failure_message(agent: str, error: str, log: str, ca_bundle: Path | None) -> str:
    """The one-line error for ``agent``'s failed install: how it failed, the cause from ``log``, the
    fix when the log shows a certificate failure and no CA bundle (``ca_bundle``) was trusted."""
    code = exit_code(error)
    cause = install_cause(log)
    if code is not None:
        what = f"{DETERMINISTIC} {code}" + (f": {cause}" if cause else "")
    else:
        first = error.strip().splitlines()[0] if error.strip() else "the install failed"
        what = first + (f": {cause}" if cause and cause not in first else "")
    hint = proxy_hint(f"{error}\n{log}", ca_bundle)
    return f"Agent {agent} install failed: {what}" + (f"; {hint}" if hint else "") + f" (see {LOG_NAME})"


def is_deterministic(error: str | None) -> bool:
    """Whether an ``install_failure`` error is one a retry cannot fix (the script exited non-zero)."""
    return DETERMINISTIC in (error or "")
