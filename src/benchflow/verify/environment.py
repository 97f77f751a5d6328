"""The verifier's environment: the image's, the task's ``verifier.env`` over it, pytest's invariants on top.

The image's ``ENV`` lines and the task's settings are the task author's, not the agent's: the
verifier starts from them as ``test.sh`` run by hand does. What the agent can leave behind is
files; the fence (:mod:`.fence`) removes those that would change how its work is graded, and the
pins here keep pytest's plugins and conftests to the trusted ones.
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

PLUGIN_PATH_PREFIX = f'export PYTHONPATH="{PLUGIN_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"\n'
"""Shell line run before the verifier's command: the plugin folder goes in front of the image's (or
the task's) ``PYTHONPATH``, which stays as the task author set it."""


def pinned_env(task_env: Mapping[str, str], *, verifier_dir: str, workdir: str) -> dict[str, str]:
    """The verifier's environment: the image's own (the exec inherits it), the task's values over
    it, and pytest's plugin and config invariants over those.

    Only what keeps an agent's *files* out of the run is pinned: plugin autoloading stays off
    (``-p benchflow_trusted_plugins`` loads the pytest plugins installed root-owned once pytest
    starts, see :mod:`benchflow.verify.trusted_plugins`, so a verifier that installs
    ``pytest-json-ctrf`` itself can use ``--ctrf``), conftests stop at the verifier folder and
    nothing is cached in the workspace. The image's ``PATH``, ``PYTHONPATH``, ``HOME`` and the
    rest are the task author's: they are left as the image sets them, so the verifier sees what
    ``test.sh`` sees when run by hand in the same container. What an agent can plant to change
    the run (modules that shadow the standard library or pytest in the working folder, programs in
    folders on ``PATH`` it can write, start-up files, cached bytecode) the fence removes
    (:mod:`.fence`); ``docs/SECURITY.md`` says the trade-off. The caller runs
    :data:`PLUGIN_PATH_PREFIX` first.
    """
    env = dict(task_env)
    env.update({
        "PYTEST_ADDOPTS": f"-c /dev/null --confcutdir={verifier_dir} -p no:cacheprovider --rootdir={workdir} "
                          f"-p {PLUGIN_MODULE}",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    return env
