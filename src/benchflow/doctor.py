"""``bench doctor``: can this machine run evals?

Checks, each ``ok``, ``warn`` or ``fail`` with a one-line detail:

- Python version (required: 3.11+) and whether ``uv`` is installed (info);
- every registered sandbox backend (built-in or from an installed package) and
  whether it works here, by its own ``available()`` probe, with what it does
  with public-network tasks (and, as a warning, why it runs them with less
  here and the fix: ``Capabilities.fallback_note``); the one named by
  ``--sandbox`` is required;
- credentials, by name and source only (environment or ``.env``), never values;
- network probes (short TCP connects to model providers and package registries)
  unless ``offline``; a failed probe is a warning, never required.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchflow.util.files import dotenv_names

CREDENTIAL_VARS = (
    "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY", "AZURE_API_KEY", "GITHUB_TOKEN", "DAYTONA_API_KEY",
    "MODAL_TOKEN_SECRET",
)
PROBES = (("api.anthropic.com", 443), ("api.openai.com", 443), ("generativelanguage.googleapis.com", 443),
          ("pypi.org", 443))
PROBE_TIMEOUT_SEC = 2.0


@dataclass
class Check:
    group: str
    name: str
    status: str
    """ok, warn, fail, or skip (an agent-start stage not run)."""
    detail: str
    required: bool = False


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(c.required and c.status == "fail" for c in self.checks)

    def to_json(self) -> dict:
        return {"ok": self.ok, "checks": [asdict(c) for c in self.checks]}


def _python() -> list[Check]:
    version = ".".join(map(str, sys.version_info[:3]))
    good = sys.version_info >= (3, 11)
    checks = [Check("python", "python", "ok" if good else "fail",
                    f"Python {version} at {sys.executable}" + ("" if good else "; BenchFlow needs 3.11+"),
                    required=True)]
    uv = shutil.which("uv")
    checks.append(Check("python", "uv", "ok" if uv else "warn",
                        uv or "not installed (optional: installs agents faster)"))
    return checks


def _backend(name: str, required: bool) -> list[Check]:
    """The backend's own probe, and for one that works with a network fallback here, why and the fix."""
    from benchflow.sandbox import get_backend

    note = None
    try:
        backend = get_backend(name)
        works, reason = backend.available()
        if works:
            reason += _network_note(backend.capabilities)
            note = backend.capabilities.fallback_note
    except Exception as exc:  # noqa: BLE001 - a backend that breaks (even on import) does not work here
        works, reason = False, f"{type(exc).__name__}: {exc}"
    status = "ok" if works else ("fail" if required else "warn")
    checks = [Check("sandbox", name, status, reason, required=required)]
    if note:
        checks.append(Check("sandbox", f"{name} network", "warn", note))
    return checks


def _network_note(caps) -> str:
    if "public" in caps.network_modes:
        return "; public-network tasks get a network"
    if "public" in caps.network_fallbacks:
        return f"; public-network tasks run with {caps.network_fallbacks['public']}"
    return "; public-network tasks are refused"


def _credentials(cwd: Path) -> list[Check]:
    in_dotenv = dotenv_names(cwd / ".env")
    checks = []
    for name in CREDENTIAL_VARS:
        if os.environ.get(name):
            checks.append(Check("credentials", name, "ok", "set in the environment"))
        elif name in in_dotenv:
            checks.append(Check("credentials", name, "ok", f"set in {cwd / '.env'}"))
    if not checks:
        checks.append(Check("credentials", "model credentials", "warn",
                            "none found (" + ", ".join(CREDENTIAL_VARS[:5]) + ", …); "
                            "only the oracle and nop agents can run"))
    return checks


def _probe(host: str, port: int) -> Check:
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_SEC):
            pass
    except OSError as exc:
        return Check("network", f"{host}:{port}", "warn", f"unreachable ({exc.__class__.__name__}: {exc})")
    return Check("network", f"{host}:{port}", "ok", "reachable")


def run_doctor(*, sandbox: str = "docker", offline: bool = False, cwd: Path | None = None) -> DoctorReport:
    """Run every check; the backend named ``sandbox`` is required to work."""
    from benchflow.errors import ConfigError
    from benchflow.sandbox import names

    known = names()
    if sandbox not in known:
        raise ConfigError(f"--sandbox {sandbox}: unknown sandbox; use one of: {', '.join(known)}")
    report = DoctorReport(_python())
    with ThreadPoolExecutor(max_workers=8) as pool:
        backends = [pool.submit(_backend, name, name == sandbox) for name in known]
        probes = [] if offline else [pool.submit(_probe, host, port) for host, port in PROBES]
        report.checks += [check for f in backends for check in f.result()]
        report.checks += _credentials(cwd or Path.cwd())
        report.checks += [f.result() for f in probes]
    if offline:
        report.checks.append(Check("network", "probes", "ok", "skipped (--offline)"))
    return report


def agent_start_check(name: str, *, sandbox: str, ca_bundle: str | None) -> list[Check]:
    """Required checks, one per start-up stage (:mod:`benchflow.jobs.stages`): install, launch, handshake.

    The first-model-call stage is listed as not exercised: doctor sends no prompt and spends nothing.
    """
    import asyncio

    from benchflow.errors import BenchError
    from benchflow.jobs.agent_start import agent_start
    from benchflow.jobs.api import resolve_ca_bundle

    try:
        stages = asyncio.run(agent_start(name, sandbox=sandbox, ca_bundle=resolve_ca_bundle(ca_bundle)))
    except BenchError as exc:
        return [Check("agent", f"start {name}", "fail", f"{exc.category}: {exc}", required=True)]
    status = {"ok": "ok", "FAIL": "fail"}
    return [Check("agent", f"start {name}: {stage.name}", status.get(stage.status, "skip"),
                  stage.describe() if stage.status in status else stage.line(),
                  required=stage.status in status) for stage in stages]
