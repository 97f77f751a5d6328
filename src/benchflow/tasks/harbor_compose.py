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


def host_source(volume: str) -> bool:
    """True for a ``SOURCE:TARGET[:mode]`` volume whose source is a folder of the host."""
    source, sep, _ = volume.partition(":")
    return bool(sep) and source.startswith(("$", "/", "~"))


def without_host_mounts(data: Any) -> tuple[Any, list[str]]:
    """(``data``, the parsed compose file, with every host-folder volume left out; one note per mount)."""
    dropped: list[str] = []
    services = data.get("services") if isinstance(data, dict) else None
    for name, body in (services or {}).items() if isinstance(services, dict) else ():
        volumes = body.get("volumes") if isinstance(body, dict) else None
        if not isinstance(volumes, list):
            continue
        kept = []
        for item in volumes:
            if (isinstance(item, str) and host_source(item)) or (isinstance(item, dict) and item.get("type") == "bind"
                                                                  and str(item.get("source", "")).startswith(("$", "/", "~"))):
                dropped.append(f"services.{name}.volumes: {item if isinstance(item, str) else item.get('source')} "
                               "is a host folder; not mounted (the sandbox shares nothing of the host; its /logs "
                               "are copied out)")
            else:
                kept.append(item)
        body["volumes"] = kept
    return data, dropped
