"""The verifier's environment: the task's ``verifier.env`` under pinned security invariants.

Whatever the task or the agent left behind, the verifier runs with a fixed
PATH, no user site, no injected preload, and pytest confined to the verifier
folder, so an agent cannot change how its work is graded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from benchflow.errors import VerifierError

_TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def resolve_templates(values: Mapping[str, str], host_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Fill ``${VAR}`` / ``${VAR:-default}`` from the host environment.

    Raises:
        VerifierError: a variable is unset and has no default.
    """
    env = os.environ if host_env is None else host_env
    out: dict[str, str] = {}
    for key, value in values.items():
        def fill(match: re.Match[str], key: str = key) -> str:
            name, default = match.group(1), match.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise VerifierError(f"verifier.env.{key}: ${{{name}}} is not set on this machine; "
                                f"set it or give a default as ${{{name}:-value}}", category="verifier_failure")
        out[key] = _TEMPLATE.sub(fill, str(value))
    return out


PLUGIN_DIR = "/benchflow-verifier"
"""Root-owned folder, made fresh before each verification, holding :mod:`trusted_plugins`."""
PLUGIN_MODULE = "benchflow_trusted_plugins"


def pinned_env(task_env: Mapping[str, str], *, verifier_dir: str, workdir: str) -> dict[str, str]:
    """The verifier's environment: task values first, the invariants re-pinned over them.

    Plugin autoloading stays off; ``-p benchflow_trusted_plugins`` loads the pytest plugins that
    are installed root-owned once pytest starts (see :mod:`benchflow.verify.trusted_plugins`),
    so a verifier that installs ``pytest-json-ctrf`` itself can use ``--ctrf``.
    """
    env = dict(task_env)
    env.update({
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "PYTEST_ADDOPTS": f"-c /dev/null --confcutdir={verifier_dir} -p no:cacheprovider --rootdir={workdir} "
                          f"-p {PLUGIN_MODULE}",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": "/nonexistent",
        "PYTHONSAFEPATH": "1",
        "PYTHONPATH": PLUGIN_DIR,
        "PYTHONSTARTUP": "",
        "LD_PRELOAD": "",
        "LD_LIBRARY_PATH": "",
        "PYTHONNOUSERSITE": "1",
        "PIP_USER": "0",
        "PIP_NO_USER_CONFIG": "1",
        "PIP_BREAK_SYSTEM_PACKAGES": "1",
        "HOME": "/root",
        "PYTHONBREAKPOINT": "0",
        "COVERAGE_PROCESS_START": "",
        "DJANGO_SETTINGS_MODULE": "",
        "CELERY_CONFIG_MODULE": "",
    })
    return env
