"""What a Harbor task's ``environment/docker-compose.yaml`` takes from its harness, not from the user.

Harbor (and BenchFlow 0.x) merge a task's compose file over their own and fill a set of variables
themselves: the build context and image name of ``main``, the host folders bind-mounted at
``/logs/verifier`` and ``/logs/agent``, the task's cpus and memory, the network mode, ``/tests``.
Published tasks read them (SkillsBench: 7 of 87). Here they are the harness's too: given the values
BenchFlow's sandbox means by them, never read from this machine's environment, so
``--allow-task-env`` is not asked for them.

A volume whose source is a host folder (``${HOST_VERIFIER_LOGS_PATH}:...``, ``${HOME}/.config/gcloud:...``,
``/abs/path:...``) is never mounted: the sandbox's own ``/logs`` folders are copied out after the
trial, and nothing of the host is shared with a task. Such a mount is left out with a note, and the
variables in its source are not read either. A source relative to the task (``./data:/data``) is the
task's own content and is refused by the compose reader (a sandbox has no host folder to give it).
"""

from __future__ import annotations

from typing import Any

HARNESS_VARIABLES: dict[str, str] = {
    "CONTEXT_DIR": ".",
    "MAIN_IMAGE_NAME": "main",
    "ENV_VERIFIER_LOGS_PATH": "/logs/verifier",
    "ENV_AGENT_LOGS_PATH": "/logs/agent",
    "ENV_ARTIFACTS_PATH": "/logs/artifacts",
    "TEST_DIR": "/tests",
    "NETWORK_MODE": "bridge",
    "CPUS": "",
    "MEMORY": "",
}
"""Name -> the value it has here (``main``'s image, build and ``deploy`` are BenchFlow's own, so
their values only need to interpolate)."""


HOST_FOLDER = ("$", "/", "~")
"""How a volume's source that names a folder of the host begins (a variable, an absolute path, home)."""


def _host_folder(volume: Any) -> str | None:
    """The host folder ``volume`` (``SOURCE:TARGET[:mode]``, or a long-syntax bind) mounts, else None."""
    if isinstance(volume, str):
        source, sep, _ = volume.partition(":")
        return volume if sep and source.startswith(HOST_FOLDER) else None
    if isinstance(volume, dict) and volume.get("type") == "bind" and str(volume.get("source", "")).startswith(HOST_FOLDER):
        return str(volume["source"])
    return None


def without_host_mounts(data: Any) -> tuple[Any, list[str]]:
    """(``data``, the parsed compose file, with every host-folder volume left out; one note per mount)."""
    dropped: list[str] = []
    services = data.get("services") if isinstance(data, dict) else None
    for name, body in services.items() if isinstance(services, dict) else ():
        if not isinstance(body, dict) or not isinstance(body.get("volumes"), list):
            continue
        kept = []
        for volume in body["volumes"]:
            folder = _host_folder(volume)
            if folder is None:
                kept.append(volume)
            else:
                dropped.append(f"services.{name}.volumes: {folder} is a host folder; not mounted (the sandbox "
                               "shares nothing of the host; its /logs are copied out)")
        body["volumes"] = kept
    return data, dropped
