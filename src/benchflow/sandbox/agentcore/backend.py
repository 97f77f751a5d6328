"""The ``agentcore`` backend: each sandbox an Amazon Bedrock AgentCore Runtime session, through ``boto3``.

A sandbox is one agent runtime (``bedrock-agentcore-control`` CreateAgentRuntime)
running the task's image from ECR (:mod:`.agentcore.image`), and one runtime
session in it, where every command is an ``InvokeAgentRuntimeCommand``
(:mod:`.agentcore.sandbox`). The runtime carries the owner labels of the docker
backend as AWS tags, so ``leftovers`` finds what a killed run left with
ListAgentRuntimes + ListTagsForResource and ``remove`` deletes it.

Settings come from the environment only: the AWS credentials of botocore's
chain with the shared config and credentials files switched off (environment
variables, web identity, container or instance role), ``AWS_REGION`` (or
``AWS_DEFAULT_REGION``) and ``BENCHFLOW_AGENTCORE_ROLE_ARN``, the execution
role a runtime is created with (AgentCore requires one; it must be able to pull
from ECR). ``BENCHFLOW_AGENTCORE_CONTROL_ENDPOINT_URL``,
``BENCHFLOW_AGENTCORE_ENDPOINT_URL`` and ``BENCHFLOW_AGENTCORE_ECR_ENDPOINT_URL``
point the three clients elsewhere (the test double; a private endpoint).

What it can do (docs/agentcore.md): ``public`` only. AgentCore's network modes
are ``PUBLIC`` (internet access) and ``VPC`` (the session's interface in the
user's subnets): neither gives a sandbox without a network interface, so
``no-network`` and ``allowlist`` are refused with the reason. No snapshots, GPUs,
host mounts, multi-service pods or kept sandboxes.
"""

from __future__ import annotations

import os
import re
import time

from benchflow.errors import SandboxUnavailable

from .. import docker_engine as eng
from ..base import Backend, Capabilities, OwnedSandbox, SandboxSpec
from ..remote_common import carries, first_line, owned_row, owner_labels, wanted_labels

NAME = "agentcore"
ROLE_ENV = "BENCHFLOW_AGENTCORE_ROLE_ARN"
CONTROL_URL_ENV = "BENCHFLOW_AGENTCORE_CONTROL_ENDPOINT_URL"
DATA_URL_ENV = "BENCHFLOW_AGENTCORE_ENDPOINT_URL"
ECR_URL_ENV = "BENCHFLOW_AGENTCORE_ECR_ENDPOINT_URL"
REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
COMMAND_READ_TIMEOUT_SEC = 3700
"""A command's event stream may be silent for as long as a command runs (AgentCore's longest: 3600 s)."""
GONE = ("DELETING", "DELETE_FAILED")
NETWORK_REASON = ("AgentCore runtimes have network mode PUBLIC (internet) or VPC (an interface in your "
                  "subnets); neither runs a sandbox without a network, and the trial's allowlist proxy is "
                  "reached over a host socket a cloud sandbox has not")
_TAG_VALUE = re.compile(r"[^a-zA-Z0-9\s._:/=+@-]")


def settings() -> tuple[str, str]:
    """(region, execution role ARN) from the environment.

    Raises:
        SandboxUnavailable: one of them is missing.
    """
    region = next((os.environ[name].strip() for name in REGION_ENVS if os.environ.get(name, "").strip()), "")
    role = os.environ.get(ROLE_ENV, "").strip()
    if not role or not region:
        missing = " and ".join(n for n, v in ((ROLE_ENV, role), ("AWS_REGION", region)) if not v)
        raise SandboxUnavailable(f"--sandbox {NAME} needs {missing} (and AWS credentials in the environment)")
    return region, role


NO_SDK = "boto3 is not installed (pip install 'benchflow[agentcore]')"


def _session():
    """A boto3 session that reads no shared config or credentials file (credentials: environment only)."""
    import boto3
    import botocore.session

    core = botocore.session.Session()
    core.set_config_variable("config_file", os.devnull)
    core.set_config_variable("credentials_file", os.devnull)
    return boto3.Session(botocore_session=core, region_name=settings()[0])


def client(service: str):
    """The ``bedrock-agentcore-control``, ``bedrock-agentcore`` or ``ecr`` client.

    Raises:
        SandboxUnavailable: boto3 not installed, settings or credentials missing.
    """
    try:
        from botocore.config import Config
    except ImportError:
        raise SandboxUnavailable(f"--sandbox {NAME}: {NO_SDK}") from None
    session = _session()
    if session.get_credentials() is None:
        raise SandboxUnavailable(f"--sandbox {NAME}: no AWS credentials in the environment "
                                 "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a web identity or an instance role)")
    url_env = {"bedrock-agentcore-control": CONTROL_URL_ENV, "bedrock-agentcore": DATA_URL_ENV,
               "ecr": ECR_URL_ENV}[service]
    config = Config(retries={"mode": "standard"}, max_pool_connections=64,
                    read_timeout=COMMAND_READ_TIMEOUT_SEC if service == "bedrock-agentcore" else 60)
    return session.client(service, endpoint_url=os.environ.get(url_env, "").strip() or None, config=config)


def aws_tags(labels: dict[str, str]) -> dict[str, str]:
    """Owner labels as AWS tags (values cut to 256 characters of the allowed set)."""
    return {key: _TAG_VALUE.sub("_", str(value))[:256] for key, value in labels.items()}


class AgentCoreBackend(Backend):
    """See the module docstring."""

    name = NAME
    no_keep_reason = ("an AgentCore runtime session starts when it is made and ends with its run, so it cannot "
                      "be made without starting it")
    no_cache_reason = ("keeps no cache of its own: its images are built on the local Docker engine "
                       "(bench cache -s docker lists them); their ECR copies are not listed in this version")
    all_scope = "only the runtimes BenchFlow made (bf_…): the account's other AgentCore runtimes are not listed"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(network_modes=frozenset({"public"}), snapshots=False, gpus=False,
                            multi_service=False, build_from_dockerfile=True, resource_limits=False,
                            host_mounts=False, image_layers=False, keep=False)

    def available(self) -> tuple[bool, str]:
        try:
            import boto3  # noqa: F401
        except ImportError:
            return False, NO_SDK
        try:
            region, _ = settings()
            client("bedrock-agentcore-control").list_agent_runtimes(maxResults=1)
        except SandboxUnavailable as exc:
            return False, str(exc)
        except Exception as exc:  # noqa: BLE001 - any failure means it does not work from here
            return False, f"AgentCore in {os.environ.get('AWS_REGION') or '?'} does not answer: {first_line(exc)}"
        return True, f"AgentCore in {region}"

    def configured(self) -> bool:
        return bool(os.environ.get(ROLE_ENV, "").strip())

    def create(self, spec: SandboxSpec):
        from .sandbox import AgentCoreSandbox

        return AgentCoreSandbox(spec, capabilities=self.capabilities, labels=owner_labels(spec, NAME))

    def exists(self, sandbox_id: str) -> bool:
        try:
            found = client("bedrock-agentcore-control").get_agent_runtime(agentRuntimeId=sandbox_id)
        except Exception as exc:
            if _code(exc) == "ResourceNotFoundException":
                return False
            raise
        return found["status"] not in GONE

    def leftovers(self, owner: str | None = None) -> list[OwnedSandbox]:
        wanted = aws_tags(wanted_labels(NAME, owner))
        try:
            api = client("bedrock-agentcore-control")
        except SandboxUnavailable:
            return []
        rows = []
        try:
            for page in api.get_paginator("list_agent_runtimes").paginate():
                for item in page["agentRuntimes"]:
                    if item["status"] in GONE or not item["agentRuntimeName"].startswith("bf_"):
                        continue
                    tags = api.list_tags_for_resource(resourceArn=item["agentRuntimeArn"]).get("tags", {})
                    if carries(tags, wanted):
                        rows.append(_row(item, tags))
        except Exception as exc:
            raise SandboxUnavailable(f"AgentCore runtimes cannot be listed: {first_line(exc)}") from exc
        return rows

    def remove(self, ids: list[str]) -> dict[str, str]:
        stayed: dict[str, str] = {}
        try:
            api = client("bedrock-agentcore-control")
        except SandboxUnavailable as exc:
            return {runtime: str(exc) for runtime in ids}
        for runtime in ids:
            try:
                api.delete_agent_runtime(agentRuntimeId=runtime)
            except Exception as exc:  # noqa: BLE001
                if _code(exc) != "ResourceNotFoundException":
                    stayed[runtime] = first_line(exc)
        return stayed


def _code(exc: Exception) -> str | None:
    return getattr(exc, "response", {}).get("Error", {}).get("Code")


def _row(item: dict, tags: dict[str, str]) -> OwnedSandbox:
    updated = item.get("lastUpdatedAt")
    fallback = updated.timestamp() if hasattr(updated, "timestamp") else time.time()
    return owned_row(tags, alive=eng.owner_alive(tags), id=item["agentRuntimeId"], name=item["agentRuntimeName"],
                     sandbox=NAME, engine=f"agentcore {item['agentRuntimeArn'].split(':')[3]}",
                     state=item["status"].lower(), image="ecr", created=eng.created_at(tags, fallback) or 0.0,
                     kept=False)


BACKEND = AgentCoreBackend()
