"""The verifier's environment: the task's ``verifier.env`` under pinned security invariants.

Whatever the task or the agent left behind, the verifier runs with a fixed
PATH, no user site, no injected preload, and pytest confined to the verifier
folder, so an agent cannot change how its work is graded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchflow.errors import TaskError, VerifierError
from benchflow.tasks.task_env import fill_values


def verifier_task_env(task: Any) -> dict[str, str]:
    """The task's ``verifier.env``: as the run filled it (``--allow-task-env``), or, for a task
    nobody filled, each template's default; a host variable is never read here.

    Raises:
        VerifierError: a template without a default in a task nobody filled.
    """
    values = dict(task.config.verifier.env or {})
    if getattr(task, "env_resolved", False):
        return values
    try:
        return fill_values(values, "verifier.env", allowed=(), host_env={})
    except TaskError as exc:
        raise VerifierError(str(exc), category="verifier_failure") from None


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
