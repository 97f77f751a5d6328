"""What the cloud doubles that run their sandboxes on the local Docker engine share at cleanup."""

from __future__ import annotations

import os

import docker


def remove_containers(engine: docker.DockerClient, label: str) -> None:
    """Remove every container this process started under ``label`` (valued with its pid). The list is
    sparse (no inspect of each) and a container removed meanwhile is skipped: the engine may be
    removing one already."""
    for container in engine.containers.list(all=True, sparse=True, filters={"label": f"{label}={os.getpid()}"}):
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            pass
