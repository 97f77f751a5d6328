"""The hosted environment installed with its verifiers in a venv of its own, cached between runs.

``<cache>/hosted-envs/<owner>/<name>/<key>/``: ``venv/`` and ``installed.json`` (what was installed, written
last, atomically: a folder without it is an unfinished install, redone). The key hashes what decides the
install: the package, its version (asked for, else the one the hub calls latest, else its wheel URL: a hub
version is immutable), the ``verifiers`` pin and this Python. The venv is made from the interpreter BenchFlow runs on, without BenchFlow's packages, so an
environment's requirements never touch BenchFlow's own. An install holds ``install.lock`` (flock), so two
runs of one environment install it once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchflow.util import atomic
from benchflow.util.cache_dir import cache_root

from . import HostedEnvError
from .ref import HostedRef

INSTALL_TIMEOUT_SEC = 1800
FIRST_DRIVEN, LAST_DRIVEN = (0, 1, 0), (0, 4, 0)
"""The verifiers releases whose ``vf-eval`` (the classic one, ``load_environment`` envs) BenchFlow drives:
from 0.1.0 up to, not including, 0.4.0 (whose ``vf-eval`` is the v1 CLI of another shape)."""

_VERSIONS = ("import importlib.metadata as m, json, sys; "
             "print(json.dumps({'env': m.version(sys.argv[1]), 'verifiers': m.version('verifiers')}))")


@dataclass(frozen=True)
class Installed:
    """An installed hosted environment: where its vf-eval is and what got installed."""

    folder: Path
    env_version: str
    verifiers_version: str
    requirement: list[str]
    """What pip was asked to install (the package, pinned, and the verifiers pin)."""

    @property
    def python(self) -> Path:
        return self.folder / "venv" / "bin" / "python"

    @property
    def vf_eval(self) -> Path:
        return self.folder / "venv" / "bin" / "vf-eval"


def requirement(ref: HostedRef, found: dict[str, Any], verifiers_pin: str | None) -> tuple[list[str], list[str]]:
    """(what to install, pip's index options): ``<package>==<version>`` from the hub's simple index
    (``prime env install``'s way), else its wheel URL; plus ``verifiers==<pin>`` when pinned."""
    index = found.get("simple_index_url")
    if index:
        wanted = [f"{ref.package}=={ref.version}" if ref.version else ref.package]
        options = ["--extra-index-url", str(index)]
    else:
        wanted, options = [str(found["wheel_url"])], []
    if verifiers_pin:
        wanted.append(f"verifiers=={verifiers_pin}")
    return wanted, options


def folder_for(ref: HostedRef, found: dict[str, Any], verifiers_pin: str | None) -> Path:
    version = ref.version or found.get("version") or found.get("wheel_url") or found.get("simple_index_url")
    key = json.dumps({"package": ref.package, "version": version, "verifiers": verifiers_pin,
                      "python": sys.version.split()[0]}, sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_root() / "hosted-envs" / ref.owner / ref.name / digest


def ensure_installed(ref: HostedRef, found: dict[str, Any], verifiers_pin: str | None,
                     log: Path) -> Installed:
    """The environment's venv, installed now unless an earlier run finished installing it; pip's output
    is appended to ``log``.

    Raises:
        HostedEnvError: the venv or the install failed (the last line pip printed), or the verifiers installed
            has no vf-eval BenchFlow drives.
    """
    folder = folder_for(ref, found, verifiers_pin)
    folder.mkdir(parents=True, exist_ok=True)
    wanted, options = requirement(ref, found, verifiers_pin)
    with open(folder / "install.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = folder / "installed.json"
        if not record.is_file():
            _install(ref, folder, wanted, options, log)
            versions = json.loads(_run([str(folder / "venv" / "bin" / "python"), "-c", _VERSIONS, ref.package],
                                       ref, "reading the installed versions", log))
            atomic.write_json(record, {"env_version": versions["env"], "verifiers_version": versions["verifiers"],
                                       "requirement": wanted, "index_options": options})
        data = json.loads(record.read_text())
    installed = Installed(folder, data["env_version"], data["verifiers_version"], data["requirement"])
    _check_driven(ref, installed)
    return installed


def _install(ref: HostedRef, folder: Path, wanted: list[str], options: list[str], log: Path) -> None:
    venv = folder / "venv"
    shutil.rmtree(venv, ignore_errors=True)  # an unfinished install of an earlier run
    _run([sys.executable, "-m", "venv", str(venv)], ref, "creating its venv", log)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
          "--no-input", *options, *wanted], ref, f"pip install {' '.join(wanted)}", log)


def _run(argv: list[str], ref: HostedRef, what: str, log: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_SEC, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HostedEnvError(f"{ref.label}: {what} took over {INSTALL_TIMEOUT_SEC}s") from None
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as out:
        out.write(f"$ {what}\n{done.stdout}{done.stderr}\n")
    if done.returncode != 0:
        last = next((line for line in reversed((done.stderr or done.stdout).splitlines()) if line.strip()), "")
        raise HostedEnvError(f"{ref.label}: {what} failed (exit {done.returncode}): {last.strip()} (see {log})")
    return done.stdout


def _release(version: str) -> tuple[int, ...]:
    from packaging.version import Version

    return Version(version).release


def _check_driven(ref: HostedRef, installed: Installed) -> None:
    release = _release(installed.verifiers_version)
    if not (FIRST_DRIVEN <= release < LAST_DRIVEN) or not installed.vf_eval.is_file():
        raise HostedEnvError(
            f"{ref.label}: verifiers {installed.verifiers_version} was installed; BenchFlow drives the classic "
            "vf-eval of verifiers 0.1 to 0.3 (0.4's is the v1 CLI of another shape); pin one the environment "
            "supports with --source-env-verifiers-version (e.g. 0.3.1)")
