"""Regenerate ``tests/fixtures/harbor-job/jobs/`` with Harbor's own models, in a container.

    python scripts/harbor_fixture.py [--ca /etc/ssl/certs/ca-certificates.crt]

Builds ``benchflow/harbor-fixture:<version>`` from ``benchflow/standin:trixie`` (Debian 13, Python 3.13:
Harbor needs >= 3.12) with ``pip install harbor==<version>`` (host network for the build, the host CA
trusted for a TLS-intercepting proxy), runs ``tests/fixtures/harbor-job/generate.py`` in it with no
network, and replaces the fixture's ``jobs/`` folder with what it wrote.
"""

from __future__ import annotations

import argparse
import io
import shutil
import tarfile
import tempfile
from pathlib import Path

import docker

HARBOR_VERSION = "0.25.0"
BASE = "benchflow/standin:trixie"
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "harbor-job"
CA_INSIDE = "/usr/local/share/ca-certificates/host-ca.crt"
DOCKERFILE = f"""FROM {BASE}
COPY host-ca.crt {CA_INSIDE}
ENV SSL_CERT_FILE={CA_INSIDE} REQUESTS_CA_BUNDLE={CA_INSIDE} PIP_CERT={CA_INSIDE}
RUN python3 -m venv /opt/harbor && /opt/harbor/bin/pip install --no-cache-dir harbor=={HARBOR_VERSION}
ENV PATH=/opt/harbor/bin:$PATH
WORKDIR /work
"""


def build(client: docker.DockerClient, ca: Path) -> str:
    tag = f"benchflow/harbor-fixture:{HARBOR_VERSION}"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "Dockerfile").write_text(DOCKERFILE)
        shutil.copyfile(ca, Path(tmp, "host-ca.crt"))
        client.images.build(path=tmp, tag=tag, network_mode="host", rm=True, forcerm=True)
    return tag


def generate(client: docker.DockerClient, image: str) -> None:
    container = client.containers.create(image, ["python", "/work/generate.py"], network_disabled=True)
    try:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(FIXTURE / "generate.py", arcname="work/generate.py")
        container.put_archive("/", buffer.getvalue())
        container.start()
        status = container.wait()
        if status["StatusCode"] != 0:
            raise SystemExit(container.logs().decode(errors="replace"))
        stream, _ = container.get_archive("/work/jobs")
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                tar.extractall(tmp, filter="data")
            target = FIXTURE / "jobs"
            shutil.rmtree(target, ignore_errors=True)
            shutil.move(Path(tmp, "jobs"), target)
    finally:
        container.remove(force=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ca", type=Path, default=Path("/etc/ssl/certs/ca-certificates.crt"),
                        help="CA bundle to trust while pip installs Harbor")
    args = parser.parse_args()
    client = docker.from_env(timeout=900)
    generate(client, build(client, args.ca))
    print(f"wrote {FIXTURE / 'jobs'}")


if __name__ == "__main__":
    main()
