"""A task's ``environment/docker-compose.yaml``, read into the services a pod runs (:mod:`.docker.pod`).

Only the part of the Compose format a sandbox can honour is accepted; the rest is refused with one
line naming the file and the key, never silently dropped when it matters:

- per service: ``image`` or ``build`` (``context``, ``dockerfile``), ``environment``, ``command``,
  ``entrypoint``, ``depends_on`` (list, or conditions ``service_started`` / ``service_healthy`` /
  ``service_completed_successfully``), ``healthcheck``, ``working_dir``, ``user``, ``volumes`` of
  the named, anonymous or tmpfs kind, ``tmpfs``, and ``ports``/``expose`` (read only to find two
  services on one port: every service shares one network namespace).
- a volume from a host folder (``/abs``, ``~``, ``${VAR}``: Harbor's log mounts, a user's credentials)
  is left out with a note (:mod:`benchflow.tasks.harbor_compose`); one relative to the task
  (``./data``) and everything that would undo the sandbox's hardening (``privileged``, ``cap_add``,
  ``devices``, a ``network_mode`` other than the default, ``pid``, …) are refused.
- Harbor's harness variables (``${CONTEXT_DIR}``, ``${ENV_VERIFIER_LOGS_PATH}``, ``${CPUS}``, …) have
  the values BenchFlow's sandbox means by them, not this machine's.
- keys with no meaning in a pod (``container_name``, ``restart``, ``networks``, ``deploy``, …) are
  ignored and listed in :attr:`ComposeFile.ignored`.

``main`` is the agent's container. Its image and command are BenchFlow's (the task's Dockerfile or
``sandbox.docker_image``); from the file it takes ``environment``, ``depends_on``, ``volumes``,
``tmpfs`` and its ports. Variables: ``${NAME:-default}`` and ``${NAME-default}`` give the default
unless ``variables`` (what the run lets tasks read) has the name, ``$$`` is a ``$``, and a bare
``${NAME}`` that ``variables`` does not hold is refused.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchflow.errors import TaskError
from benchflow.tasks.harbor_compose import HARNESS_VARIABLES, without_host_mounts

MAIN = "main"
FILE_NAMES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
CONDITIONS = ("service_started", "service_healthy", "service_completed_successfully")
SERVICE_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
REFUSED = ("privileged", "cap_add", "devices", "network_mode", "pid", "ipc", "userns_mode", "volumes_from",
           "security_opt", "sysctls", "cgroup_parent", "runtime", "device_cgroup_rules", "cgroup", "uts",
           "links", "external_links", "extra_hosts", "dns", "group_add")
IGNORED = ("container_name", "restart", "networks", "deploy", "platform", "labels", "logging", "hostname",
           "stdin_open", "tty", "init", "stop_grace_period", "stop_signal", "shm_size", "ulimits",
           "mem_limit", "memswap_limit", "cpus", "cpu_shares", "pull_policy", "profiles", "domainname",
           "env_file", "read_only", "scale", "oom_score_adj", "attach")
SANDBOX_NETWORK = ("bridge", "default")
"""``network_mode`` values that ask for nothing but the default network (Harbor's ``${NETWORK_MODE:-bridge}``):
the sandbox's network applies; any other value is refused."""
MAIN_IGNORED = ("image", "build", "command", "entrypoint", "working_dir", "user", "healthcheck")
_VAR = re.compile(r"\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)")
_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Volume:
    kind: str
    """``named``, ``anonymous`` or ``tmpfs``."""
    target: str
    source: str | None = None
    """The volume's name in the file (``named`` only)."""
    read_only: bool = False


@dataclass
class Service:
    name: str
    image: str | None = None
    build_context: Path | None = None
    dockerfile: str = "Dockerfile"
    environment: dict[str, str] = field(default_factory=dict)
    command: list[str] | None = None
    entrypoint: list[str] | None = None
    depends_on: dict[str, str] = field(default_factory=dict)
    """Service name -> condition (:data:`CONDITIONS`)."""
    healthcheck: dict[str, Any] | None = None
    """In the Engine API's form (``Test``, durations in nanoseconds); None: the image's own."""
    working_dir: str | None = None
    user: str | None = None
    volumes: list[Volume] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)


@dataclass
class ComposeFile:
    path: Path
    services: dict[str, Service]
    """Every service, ``main`` included (implied when the file does not name it)."""
    ignored: list[str] = field(default_factory=list)
    """``services.<name>.<key>`` entries that have no meaning here and were left out."""
    dropped: list[str] = field(default_factory=list)
    """Host-folder volumes left out, one note each (:mod:`benchflow.tasks.harbor_compose`): the run card
    shows them."""

    @property
    def siblings(self) -> list[Service]:
        """The services other than ``main``, each after what it depends on."""
        order: list[str] = []

        def visit(name: str) -> None:
            if name in order:
                return
            for dep in self.services[name].depends_on:
                visit(dep)
            order.append(name)

        for name in self.services:
            visit(name)
        return [self.services[n] for n in order if n != MAIN]


def find(environment_dir: Path | None) -> Path | None:
    """The compose file of a task's ``environment/`` folder, if it has one."""
    if environment_dir is None:
        return None
    return next((environment_dir / n for n in FILE_NAMES if (environment_dir / n).is_file()), None)


def load(path: Path, variables: Mapping[str, str] | None = None) -> ComposeFile:
    """Read and check ``path`` (see the module docstring).

    Raises:
        TaskError: the file is not valid YAML, or asks for something a sandbox cannot do; the
            message names the file and the key.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TaskError(f"{path}: not readable as YAML ({type(exc).__name__}); fix the file") from exc
    data, dropped = without_host_mounts(data)
    reader = _Reader(path, {**HARNESS_VARIABLES, **(variables or {})})
    compose = reader.file(_interpolate(data, reader))
    compose.dropped = dropped
    return compose


class _Reader:
    def __init__(self, path: Path, variables: dict[str, str]) -> None:
        self.path = path
        self.variables = variables
        self.ignored: list[str] = []

    def fail(self, where: str, why: str) -> TaskError:
        return TaskError(f"{self.path}: {where}: {why}")

    def file(self, data: Any) -> ComposeFile:
        if not isinstance(data, dict) or not isinstance(data.get("services"), dict) or not data["services"]:
            raise self.fail("services", "the file must have a non-empty 'services' mapping")
        services: dict[str, Service] = {}
        for name, body in data["services"].items():
            name = str(name)
            if not SERVICE_NAME.match(name):
                raise self.fail(f"services.{name}", "a service name is letters, digits, '_', '.', '-'")
            services[name] = self.service(name, body if body is not None else {})
        services.setdefault(MAIN, Service(name=MAIN))
        compose = ComposeFile(path=self.path, services=services, ignored=self.ignored)
        self.check_graph(services)
        self.check_ports(services)
        return compose

    def service(self, name: str, body: Any) -> Service:
        where = f"services.{name}"
        if not isinstance(body, dict):
            raise self.fail(where, "must be a mapping")
        if body.get("network_mode") in SANDBOX_NETWORK:  # the default network is the sandbox's own
            self.ignored.append(f"{where}.network_mode")
            body = {k: v for k, v in body.items() if k != "network_mode"}
        for key in body:
            if key in REFUSED:
                raise self.fail(f"{where}.{key}", "not allowed: services run with the sandbox's isolation "
                                "and hardening; remove the key")
        skip = IGNORED + (MAIN_IGNORED if name == MAIN else ())
        self.ignored += [f"{where}.{key}" for key in body if key in skip]
        known = set(skip) | {"image", "build", "environment", "command", "entrypoint", "depends_on", "healthcheck",
                             "working_dir", "user", "volumes", "tmpfs", "ports", "expose"}
        unknown = sorted(str(k) for k in body if k not in known and k not in REFUSED)
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}", "not supported in a sandbox; remove it")
        svc = Service(name=name)
        if name != MAIN:
            svc.image = self.text(body, "image", where)
            self.build(svc, body.get("build"), where)
            if svc.image is None and svc.build_context is None:
                raise self.fail(where, "give an 'image' or a 'build'")
            svc.command = self.argv(body.get("command"), f"{where}.command")
            svc.entrypoint = self.argv(body.get("entrypoint"), f"{where}.entrypoint")
            svc.healthcheck = self.healthcheck(body.get("healthcheck"), f"{where}.healthcheck")
            svc.working_dir = self.text(body, "working_dir", where)
            svc.user = self.text(body, "user", where)
        svc.environment = self.environment(body.get("environment"), f"{where}.environment")
        svc.depends_on = self.depends_on(body.get("depends_on"), f"{where}.depends_on")
        svc.volumes = self.volumes(body.get("volumes"), f"{where}.volumes") + \
            self.tmpfs(body.get("tmpfs"), f"{where}.tmpfs")
        svc.ports = self.ports(body.get("ports"), f"{where}.ports") + self.ports(body.get("expose"), f"{where}.expose")
        return svc

    def text(self, body: dict, key: str, where: str) -> str | None:
        value = body.get(key)
        if value is None:
            return None
        if not isinstance(value, (str, int)) or isinstance(value, bool) or str(value) == "":
            raise self.fail(f"{where}.{key}", "must be a non-empty string")
        return str(value)

    def build(self, svc: Service, value: Any, where: str) -> None:
        if value is None:
            return
        if isinstance(value, str):
            value = {"context": value}
        if not isinstance(value, dict) or not isinstance(value.get("context", "."), str):
            raise self.fail(f"{where}.build", "give a context folder, or {context, dockerfile}")
        base = self.path.parent.resolve()
        context = (base / value.get("context", ".")).resolve()
        if context != base and base not in context.parents:
            raise self.fail(f"{where}.build.context", "must be inside the task's environment/ folder")
        if not context.is_dir():
            raise self.fail(f"{where}.build.context", f"{context} is not a folder")
        dockerfile = str(value.get("dockerfile", "Dockerfile"))
        if not (context / dockerfile).is_file():
            raise self.fail(f"{where}.build.dockerfile", f"{context / dockerfile} does not exist")
        svc.build_context, svc.dockerfile = context, dockerfile

    def argv(self, value: Any, where: str) -> list[str] | None:
        if value is None:
            return None
        if isinstance(value, str):
            return shlex.split(value)
        if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
            return [str(v) for v in value]
        raise self.fail(where, "give a string or a list of strings")

    def environment(self, value: Any, where: str) -> dict[str, str]:
        if value is None:
            return {}
        if isinstance(value, list):
            pairs = {}
            for item in value:
                key, sep, val = str(item).partition("=")
                if not sep:
                    raise self.fail(f"{where}.{key}", "takes its value from your environment; give it a value")
                pairs[key] = val
            return pairs
        if isinstance(value, dict):
            out = {}
            for key, val in value.items():
                if val is None:
                    raise self.fail(f"{where}.{key}", "takes its value from your environment; give it a value")
                out[str(key)] = str(val).lower() if isinstance(val, bool) else str(val)
            return out
        raise self.fail(where, "give a mapping or a list of NAME=value")

    def depends_on(self, value: Any, where: str) -> dict[str, str]:
        if value is None:
            return {}
        if isinstance(value, list):
            return {str(name): "service_started" for name in value}
        if not isinstance(value, dict):
            raise self.fail(where, "give a list of services or a mapping of service -> {condition}")
        out = {}
        for name, body in value.items():
            condition = (body or {}).get("condition", "service_started") if isinstance(body, dict) else None
            if condition not in CONDITIONS:
                raise self.fail(f"{where}.{name}.condition", f"must be one of {', '.join(CONDITIONS)}")
            out[str(name)] = condition
        return out

    def healthcheck(self, value: Any, where: str) -> dict[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(where, "must be a mapping")
        if value.get("disable"):
            return {"Test": ["NONE"]}
        test = value.get("test")
        if isinstance(test, str):
            test = ["CMD-SHELL", test]
        if not (isinstance(test, list) and test and test[0] in ("CMD", "CMD-SHELL", "NONE")):
            raise self.fail(f"{where}.test", 'give a string, or a list starting "CMD", "CMD-SHELL" or "NONE"')
        out: dict[str, Any] = {"Test": [str(t) for t in test]}
        for key, api_key in (("interval", "Interval"), ("timeout", "Timeout"), ("start_period", "StartPeriod"),
                             ("start_interval", "StartInterval")):
            if value.get(key) is not None:
                out[api_key] = int(self.duration(value[key], f"{where}.{key}") * 1e9)
        if value.get("retries") is not None:
            if not isinstance(value["retries"], int) or value["retries"] < 0:
                raise self.fail(f"{where}.retries", "must be a whole number")
            out["Retries"] = value["retries"]
        return out

    def duration(self, value: Any, where: str) -> float:
        text = str(value).strip()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        parts = _DURATION.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise self.fail(where, f"{text!r} is not a duration such as 5s, 1m30s or 500ms")
        return sum(float(n) * _SECONDS[u] for n, u in parts)

    def volumes(self, value: Any, where: str) -> list[Volume]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, "give a list")
        out = []
        for i, item in enumerate(value):
            at = f"{where}[{i}]"
            if isinstance(item, dict):
                kind, target = item.get("type", "volume"), item.get("target")
                if not isinstance(target, str) or not target.startswith("/"):
                    raise self.fail(f"{at}.target", "give an absolute path inside the container")
                if kind == "tmpfs":
                    out.append(Volume("tmpfs", target))
                    continue
                if kind != "volume":
                    raise self.fail(at, f"type {kind!r} is a host mount; use a named volume or tmpfs")
                source = item.get("source")
                out.append(self.named(source, target, bool(item.get("read_only")), at))
                continue
            parts = str(item).split(":")
            if len(parts) == 1:
                out.append(self.named(None, parts[0], False, at))
            elif len(parts) in (2, 3):
                out.append(self.named(parts[0], parts[1], len(parts) == 3 and "ro" in parts[2].split(","), at))
            else:
                raise self.fail(at, f"{item!r} is not SOURCE:TARGET[:ro]")
        return out

    def named(self, source: Any, target: str, read_only: bool, at: str) -> Volume:
        if not target.startswith("/"):
            raise self.fail(at, f"target {target!r} must be an absolute path inside the container")
        if source is None or source == "":
            return Volume("anonymous", target, read_only=read_only)
        source = str(source)
        if source.startswith(("/", ".", "~", "$")) or "/" in source:
            raise self.fail(at, f"{source!r} is a host bind mount; use a named volume or tmpfs")
        if not SERVICE_NAME.match(source):
            raise self.fail(at, f"{source!r} is not a volume name")
        return Volume("named", target, source=source, read_only=read_only)

    def tmpfs(self, value: Any, where: str) -> list[Volume]:
        if value is None:
            return []
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise self.fail(where, "give a path or a list of paths")
        out = []
        for item in items:
            target = str(item).split(":")[0]
            if not target.startswith("/"):
                raise self.fail(where, f"{item!r} must be an absolute path")
            out.append(Volume("tmpfs", target))
        return out

    def ports(self, value: Any, where: str) -> list[int]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(where, "give a list")
        out: list[int] = []
        for item in value:
            text = str(item.get("target", "")) if isinstance(item, dict) else str(item)
            inner = text.split("/")[0].rsplit(":", 1)[-1]
            low, _, high = inner.partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise self.fail(where, f"{item!r} is not a port")
            out.extend(range(int(low), int(high or low) + 1))
        return out

    def check_graph(self, services: dict[str, Service]) -> None:
        for svc in services.values():
            for dep in svc.depends_on:
                if dep not in services:
                    raise self.fail(f"services.{svc.name}.depends_on", f"no service named {dep!r}")
                if dep == MAIN:
                    raise self.fail(f"services.{svc.name}.depends_on", "services cannot wait for main "
                                    "(main starts first and holds the network); remove 'main'")
        state: dict[str, int] = {}

        def visit(name: str, path: list[str]) -> None:
            if state.get(name) == 2:
                return
            if state.get(name) == 1:
                raise self.fail("depends_on", f"a cycle: {' -> '.join(path + [name])}")
            state[name] = 1
            for dep in services[name].depends_on:
                visit(dep, path + [name])
            state[name] = 2

        for name in services:
            visit(name, [])

    def check_ports(self, services: dict[str, Service]) -> None:
        owner: dict[int, str] = {}
        for svc in services.values():
            for port in dict.fromkeys(svc.ports):
                if port in owner:
                    raise self.fail(f"services.{svc.name}", f"port {port} is also used by service "
                                    f"{owner[port]!r}; services share one network namespace, so give one "
                                    "of them another port")
                owner[port] = svc.name


def _interpolate(node: Any, reader: _Reader, where: str = "") -> Any:
    if isinstance(node, dict):
        return {k: _interpolate(v, reader, f"{where}.{k}" if where else str(k)) for k, v in node.items()}
    if isinstance(node, list):
        return [_interpolate(v, reader, f"{where}[{i}]") for i, v in enumerate(node)]
    if not isinstance(node, str):
        return node

    def sub(match: re.Match) -> str:
        if match.group(1) == "$":
            return "$"
        name = match.group(2) or match.group(5)
        if name in reader.variables:
            value = reader.variables[name]
            return value if value or match.group(3) != ":-" else (match.group(4) or "")
        if match.group(3) is not None:
            return match.group(4) or ""
        raise reader.fail(where, f"reads ${{{name}}} from your environment; give a default "
                          f"(${{{name}:-value}}) or let tasks read it with --allow-task-env {name}")

    return _VAR.sub(sub, node)
