"""Reading a task's docker-compose.yaml: what a pod runs, and what is refused with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchflow.errors import TaskError
from benchflow.sandbox import compose_file

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "two-service" / "environment"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "docker-compose.yaml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(TaskError) as caught:
        compose_file.load(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    return message


def test_the_fixture_reads_into_services_in_dependency_order() -> None:
    compose = compose_file.load(FIXTURE / "docker-compose.yaml")
    assert [s.name for s in compose.siblings] == ["seed", "db"]
    db = compose.services["db"]
    assert db.build_context == (FIXTURE / "db").resolve() and db.image is None
    assert db.depends_on == {"seed": "service_completed_successfully"}
    assert compose.services["main"].depends_on == {"db": "service_healthy"}
    assert db.healthcheck["Interval"] == 500_000_000 and db.healthcheck["Timeout"] == 2_000_000_000
    assert db.healthcheck["Retries"] == 60 and db.healthcheck["Test"][0] == "CMD"
    assert [(v.kind, v.source, v.target, v.read_only) for v in db.volumes] == [
        ("named", "data", "/data", True), ("tmpfs", None, "/scratch", False)]
    assert db.ports == [8080]
    assert compose.services["seed"].command == ["sh", "-c", "echo seeded-42 > /data/answer"]


def test_a_mount_of_the_task_s_own_folder_is_refused_naming_file_and_key(tmp_path: Path) -> None:
    message = refused(tmp_path, 'services:\n  db:\n    image: x\n    volumes: ["./data:/data"]\n')
    assert "services.db.volumes[0]" in message and "bind mount" in message


@pytest.mark.parametrize("volume", ['"/etc:/host-etc:ro"', '"~/x:/x"', "{type: bind, source: /, target: /host}"])
def test_a_host_folder_is_never_mounted_and_the_file_says_so(tmp_path: Path, volume: str) -> None:
    compose = compose_file.load(write(tmp_path, f"services:\n  db:\n    image: x\n    volumes: [{volume}]\n"))
    assert compose.services["db"].volumes == []
    assert len(compose.dropped) == 1 and compose.dropped[0].startswith("services.db.volumes: ")


def test_two_services_on_one_port_are_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, "services:\n  a: {image: x, expose: ['5432']}\n"
                                "  b: {image: x, ports: ['15432:5432/tcp']}\n")
    assert "services.b" in message and "port 5432" in message and "'a'" in message


def test_main_declaring_a_sibling_port_is_a_clash_too(tmp_path: Path) -> None:
    assert "port 80" in refused(tmp_path, "services:\n  main: {expose: [80]}\n  web: {image: x, expose: [80]}\n")


@pytest.mark.parametrize("key", ["privileged: true", "network_mode: host", "cap_add: [SYS_ADMIN]",
                                 "pid: host", "devices: ['/dev/kmsg']"])
def test_keys_that_undo_the_sandbox_are_refused(tmp_path: Path, key: str) -> None:
    name = key.split(":")[0]
    assert f"services.db.{name}" in refused(tmp_path, f"services:\n  db:\n    image: x\n    {key}\n")


def test_dependency_mistakes_are_refused(tmp_path: Path) -> None:
    assert "no service named 'nope'" in refused(tmp_path, "services:\n  a: {image: x, depends_on: [nope]}\n")
    assert "cycle" in refused(tmp_path, "services:\n  a: {image: x, depends_on: [b]}\n"
                                        "  b: {image: x, depends_on: [a]}\n")
    assert "main" in refused(tmp_path, "services:\n  a: {image: x, depends_on: [main]}\n")
    assert "condition" in refused(tmp_path, "services:\n  a: {image: x, depends_on: {b: {condition: ready}}}\n"
                                            "  b: {image: x}\n")


def test_a_service_needs_an_image_or_a_build(tmp_path: Path) -> None:
    assert "give an 'image' or a 'build'" in refused(tmp_path, "services:\n  a: {command: [true]}\n")
    assert "build.context" in refused(tmp_path, "services:\n  a: {build: ../outside}\n")


def test_variables_take_their_default_and_a_bare_host_read_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "services:\n  a:\n    image: ${IMG:-debian:bookworm-slim}\n"
                           "    environment: {PRICE: '$$5', MODE: '${MODE-fast}'}\n")
    svc = compose_file.load(path).services["a"]
    assert svc.image == "debian:bookworm-slim" and svc.environment == {"PRICE": "$5", "MODE": "fast"}
    assert compose_file.load(path, {"IMG": "mine:1"}).services["a"].image == "mine:1"
    message = refused(tmp_path, "services:\n  a: {image: '${SECRET_IMAGE}'}\n")
    assert "services.a.image" in message and "--allow-task-env SECRET_IMAGE" in message


def test_keys_without_meaning_in_a_pod_are_ignored_and_listed(tmp_path: Path) -> None:
    path = write(tmp_path, "services:\n  main: {build: ., environment: [A=1]}\n"
                           "  a: {image: x, restart: always, container_name: c}\n")
    compose = compose_file.load(path)
    assert compose.services["main"].environment == {"A": "1"}
    assert set(compose.ignored) == {"services.main.build", "services.a.restart", "services.a.container_name"}
    assert "services.a.frobnicate" in refused(tmp_path, "services:\n  a: {image: x, frobnicate: 1}\n")


def test_environment_without_a_value_is_refused(tmp_path: Path) -> None:
    assert "services.a.environment.TOKEN" in refused(tmp_path, "services:\n  a: {image: x, environment: [TOKEN]}\n")


HARBOR = """services:
  main:
    build: {context: '${CONTEXT_DIR}'}
    image: ${MAIN_IMAGE_NAME}
    network_mode: ${NETWORK_MODE:-bridge}
    environment: ['TEST_DIR=${TEST_DIR}']
    volumes:
      - ${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}
      - ${HOME}/.config/gcloud:/root/.config/gcloud:ro
      - /etc:/host-etc
      - cache:/cache
    deploy: {resources: {limits: {cpus: '${CPUS}', memory: '${MEMORY}'}}}
"""


def test_a_harbor_compose_file_gets_the_harness_s_values_and_no_host_folder(tmp_path: Path) -> None:
    compose = compose_file.load(write(tmp_path, HARBOR), {})
    main = compose.services["main"]
    assert main.environment == {"TEST_DIR": "/tests"}
    assert [(v.kind, v.target) for v in main.volumes] == [("named", "/cache")]  # only the task's own volume
    assert len(compose.dropped) == 3 and all("host folder; not mounted" in note for note in compose.dropped)
    assert "services.main.network_mode" in compose.ignored


def test_a_harbor_compose_file_asks_the_user_for_none_of_the_harness_s_variables(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from benchflow.tasks.task_env import compose_reads

    path = write(tmp_path, HARBOR.replace("TEST_DIR=${TEST_DIR}", "TOKEN=${GH_TOKEN}"))
    reads = compose_reads(SimpleNamespace(paths=SimpleNamespace(compose_file=path)))
    assert [r.name for r in reads] == ["GH_TOKEN"]  # the user's own variable, and only it


def test_a_network_mode_other_than_the_default_is_still_refused(tmp_path: Path) -> None:
    assert "network_mode" in refused(tmp_path, "services:\n  a: {image: x, network_mode: host}\n")
