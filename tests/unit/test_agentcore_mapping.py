"""What a BenchFlow sandbox spec asks AgentCore and ECR for, checked against boto3's own service models (botocore
checks types and lengths on the way out, not patterns: those are checked here), and the stream emulation's shell
pieces run by this machine's ``sh`` and ``python3``."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import time

import boto3
import pytest
from botocore.validate import validate_parameters

from benchflow.errors import CapabilityError, SandboxUnavailable
from benchflow.sandbox import SandboxSpec, get_backend
from benchflow.sandbox.agentcore import stream as stream
from benchflow.sandbox.agentcore.backend import aws_tags, settings
from benchflow.sandbox.agentcore.image import (
    ECR_URI,
    repository_name,
    wrapper_dockerfile,
)

ROLE = "arn:aws:iam::123456789012:role/bench"
URI = "123456789012.dkr.ecr.us-east-1.amazonaws.com/benchflow/t:abc"


def model(service: str):
    return boto3.session.Session(region_name="us-east-1").client(
        service, aws_access_key_id="x", aws_secret_access_key="y").meta.service_model


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("BENCHFLOW_AGENTCORE_ROLE_ARN", ROLE)
    monkeypatch.setenv("AWS_REGION", "us-east-1")


def sandbox(**fields):
    box = get_backend("agentcore").create(SandboxSpec(**{"name": "My Task.v2", "environment_dir": None,
                                                         "cache_key": "k", "network_mode": "public", **fields}))
    box._uri = URI
    return box


def test_create_request_fits_the_service_model(aws) -> None:
    box = sandbox(env={"A": "1"}, labels={"benchflow.job": "/jobs/run 1", "benchflow.trial": "t#1"})
    request = {k: v for k, v in box._request().items() if v is not None}
    operation = model("bedrock-agentcore-control").operation_model("CreateAgentRuntime")
    validate_parameters(request, operation.input_shape)  # raises ParamValidationError on a type or length
    members = operation.input_shape.members
    assert re.fullmatch(members["agentRuntimeName"].metadata["pattern"], request["agentRuntimeName"])
    assert re.fullmatch(members["roleArn"].metadata["pattern"], request["roleArn"])
    uri = request["agentRuntimeArtifact"]["containerConfiguration"]["containerUri"]
    assert re.fullmatch(members["agentRuntimeArtifact"].members["containerConfiguration"]
                        .members["containerUri"].metadata["pattern"], uri)
    tags = members["tags"]
    for key, value in request["tags"].items():
        assert re.fullmatch(tags.key.metadata["pattern"], key) and re.fullmatch(tags.value.metadata["pattern"], value)
    assert request["tags"]["benchflow.trial"] == "t_1" and request["tags"]["benchflow.backend"] == "agentcore"
    assert request["networkConfiguration"] == {"networkMode": "PUBLIC"}
    assert request["environmentVariables"] == {"A": "1"} and request["roleArn"] == ROLE


def test_command_limits_are_the_service_models() -> None:
    from benchflow.sandbox.agentcore import commands as ac

    body = model("bedrock-agentcore").operation_model("InvokeAgentRuntimeCommand").input_shape.members["body"]
    assert body.members["command"].metadata["max"] == ac.MAX_COMMAND_CHARS
    assert len(f"printf %s {base64.b64encode(bytes(ac.CHUNK_BYTES)).decode()} | base64 -d >> /tmp/x") < ac.MAX_COMMAND_CHARS
    session = model("bedrock-agentcore").operation_model("InvokeAgentRuntimeCommand").input_shape.members[
        "runtimeSessionId"]
    assert session.metadata["min"] <= len(ac.session_id()) <= session.metadata["max"]


def test_image_names() -> None:
    assert repository_name(SandboxSpec(name="My Task.v2", environment_dir=None, cache_key="k")) == "benchflow/my-task.v2"
    assert ECR_URI.match(URI) and ECR_URI.match("public.ecr.aws/x/y:1") and not ECR_URI.match("debian:bookworm")
    assert wrapper_dockerfile("base:1").startswith("FROM base:1\n") and "ENTRYPOINT" in wrapper_dockerfile("b")


@pytest.mark.parametrize("mode", ["no-network", "allowlist"])
async def test_what_agentcore_cannot_enforce_is_refused(aws, mode: str) -> None:
    box = sandbox(network_mode=mode)
    box._uri = None  # not built yet: build() refuses before anything is made
    with pytest.raises(CapabilityError, match="PUBLIC"):
        await box.build()
    assert get_backend("agentcore").capabilities.network_for(mode) is None


def test_settings_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("BENCHFLOW_AGENTCORE_ROLE_ARN", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with pytest.raises(SandboxUnavailable, match="BENCHFLOW_AGENTCORE_ROLE_ARN"):
        settings()
    monkeypatch.setenv("BENCHFLOW_AGENTCORE_ROLE_ARN", ROLE)
    assert settings() == ("eu-west-1", ROLE)
    assert aws_tags({"k": "a,b;c"}) == {"k": "a_b_c"}


def test_the_stream_emulation_runs_a_process_through_a_fifo(tmp_path) -> None:
    """The start line, stdin writes and the follower, run here by ``sh`` and ``python3`` as the runtime would."""
    folder = str(tmp_path / "proc")
    line = stream.start_line(["sh", "-c", "cat; echo done >&2; exit 3"], "m1", folder)
    subprocess.run(["sh", "-c", line], check=True, timeout=30)
    for data in (b"one\n", b"\x00\xffbinary\n"):
        encoded = base64.b64encode(data).decode()
        subprocess.run(["sh", "-c", f"printf %s {encoded} | base64 -d >> {folder}/in"], check=True, timeout=30)
    subprocess.run(["touch", f"{folder}/closed"], check=True)
    deadline = time.monotonic() + 30
    lines: list[str] = []
    while not any(line.startswith("x") for line in lines) and time.monotonic() < deadline:
        offsets = [sum(len(base64.b64decode(l[1:])) for l in lines if l[:1] == tag) for tag in "oe"]
        follow = subprocess.run([sys.executable, "-c", stream.FOLLOW, folder, *map(str, offsets), "1"],
                                check=False, capture_output=True, text=True, timeout=30)
        lines += [line for line in follow.stdout.splitlines() if line[:1] in "oex"]
    out = b"".join(base64.b64decode(line[1:]) for line in lines if line[:1] == "o")
    err = b"".join(base64.b64decode(line[1:]) for line in lines if line[:1] == "e")
    assert (out, err, lines[-1]) == (b"one\n\x00\xffbinary\n", b"done\n", "x3")
