"""TEST DOUBLE: a third-party sandbox backend that BenchFlow knows only through an entry point.

``tests/doubles/sandbox_plugin`` holds the installed-package metadata (a
``.dist-info`` folder declaring ``docker-variant`` in the ``benchflow.sandboxes``
entry point group); putting that folder on ``sys.path`` (or ``PYTHONPATH``)
installs the backend, with no edit anywhere in ``src/benchflow``.

It runs containers on the local Docker engine under its own name, with fewer
capabilities than ``docker`` (no snapshots, no kept sandboxes, no agent image
layers), so the shared suites must follow its capabilities rather than its name.
"""

from __future__ import annotations

from pathlib import Path

from benchflow.sandbox.base import Capabilities
from benchflow.sandbox.docker.backend import DockerBackend

PLUGIN_PATH = Path(__file__).parent / "sandbox_plugin"
"""The folder that, on ``sys.path``, makes this backend an installed package's."""


class DockerVariant(DockerBackend):
    def __init__(self) -> None:
        super().__init__("docker-variant", remote=False)

    @property
    def capabilities(self) -> Capabilities:
        return super().capabilities.model_copy(update={"snapshots": False, "keep": False, "image_layers": False})


BACKEND = DockerVariant()
