"""The environment plane's inputs: manifests (contracts §7.4), the ``name@version`` registry, and what
``--state`` / ``--environment-manifest`` bind."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchflow.environment_plane.binding import bind
from benchflow.environment_plane.manifest import load_manifest
from benchflow.environment_plane.registry import BUILTIN, REGISTRY_VAR
from benchflow.environment_plane.services import service_env
from benchflow.errors import ConfigError
from benchflow.jobs.spec import RunSpec

SERVICES_TOML = """
[environment]
name = "mini"
base_image = "example/mini:1"
owns_lifecycle = false
[environment.task_selection]
mechanism = "env_var"
key = "MINI_TASK"
[environment.forward_env]
keys = ["MINI_TOKEN", "MINI_UNSET"]
[[environment.services]]
name = "api"
command = "mini-api serve --port 8100"
port = 8100
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_built_in_env0_pins_load_and_the_outage_lacks_gmail_and_slack():
    prod, outage = load_manifest(BUILTIN / "env0@prod.toml"), load_manifest(BUILTIN / "env0@outage.toml")
    assert (prod.name, prod.base_image, prod.owns_lifecycle) == ("env-0", "ghcr.io/benchflow-ai/env0:0.2.0", False)
    assert [s.port for s in prod.services] == list(range(9000, 9008))
    assert {s.name for s in prod.services} - {s.name for s in outage.services} == {"mock-gmail", "mock-slack"}
    assert prod.probes(prod.services[:1]) == [("http", "http://localhost:9000/health")]


def test_a_yaml_manifest_reads_as_its_toml_twin(tmp_path):
    toml = load_manifest(_write(tmp_path / "environment.toml", SERVICES_TOML))
    yaml_text = ("environment:\n  name: mini\n  base_image: example/mini:1\n  owns_lifecycle: false\n"
                 "  task_selection: {mechanism: env_var, key: MINI_TASK}\n"
                 "  forward_env: {keys: [MINI_TOKEN, MINI_UNSET]}\n"
                 "  services: [{name: api, command: mini-api serve --port 8100, port: 8100}]\n")
    assert load_manifest(_write(tmp_path / "environment.yaml", yaml_text)) == toml


@pytest.mark.parametrize(("text", "says"), [
    ("[other]\nname = 'x'\n", "no [environment] table"),
    ("[environment]\nname = 'x'\nimage = 'a'\nbase_image = 'b'\n", "set exactly one of image"),
    ("[environment]\nname = 'x'\nbase_image = 'b'\nowns_lifecycle = false\n", "owns_lifecycle = false needs"),
    ("[environment]\nname = 'x'\nimage = 'a'\n[[environment.services]]\nname = 's'\ncommand = 'c'\nport = 1\n",
     "owns_lifecycle = true means the image starts its services"),
    ("[environment]\nname = 'x'\nimage = 'a'\nisolation = 'shared'\n", "environment.isolation"),
    ("[environment]\nname = 'x'\nimage = 'a'\nreadyness = {}\n", "environment.readyness: Extra inputs"),
    ("[environment\n", "not a readable environment manifest"),
])
def test_a_wrong_manifest_is_refused_in_one_line_naming_the_file_and_key(tmp_path, text, says):
    path = _write(tmp_path / "environment.toml", text)
    with pytest.raises(ConfigError) as refused:
        load_manifest(path)
    assert str(refused.value).startswith(f"{path}: ") and says in str(refused.value)
    assert "\n" not in str(refused.value)


def test_registry_specs_resolve_in_the_built_in_registry_and_a_bare_name_takes_the_highest_version(monkeypatch):
    monkeypatch.delenv(REGISTRY_VAR, raising=False)
    pinned = bind(RunSpec(environment_manifest="env0@outage"))
    bare = bind(RunSpec(environment_manifest="env0"))
    assert (pinned.spec, pinned.path.name) == ("env0@outage", "env0@outage.toml")
    assert (bare.spec, bare.path.name) == ("env0@prod", "env0@prod.toml")  # "prod" sorts after "outage"
    assert pinned.env_hash == "sha256:" + hashlib.sha256((BUILTIN / "env0@outage.toml").read_bytes()).hexdigest()
    with pytest.raises(ConfigError, match="env0@staging: not in the built-in registry; it has env0@outage, env0@prod"):
        bind(RunSpec(environment_manifest="env0@staging"))


def test_benchflow_env_registry_replaces_the_built_in_one(tmp_path, monkeypatch):
    _write(tmp_path / "mini@v1.toml", SERVICES_TOML)
    _write(tmp_path / "mini.yaml", "environment: {name: mini-default, image: example/mini:2}\n")
    monkeypatch.setenv(REGISTRY_VAR, str(tmp_path))
    assert bind(RunSpec(environment_manifest="mini@v1")).manifest.name == "mini"
    default = bind(RunSpec(environment_manifest="mini"))
    assert (default.spec, default.manifest.name) == ("mini@default", "mini-default")
    with pytest.raises(ConfigError, match=rf"env0@prod: not in \${REGISTRY_VAR} \({tmp_path}\); it has mini, mini@v1"):
        bind(RunSpec(environment_manifest="env0@prod"))
    monkeypatch.setenv(REGISTRY_VAR, str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="not a folder"):
        bind(RunSpec(environment_manifest="mini@v1"))


def test_state_wins_and_its_tools_keep_only_the_services_they_name(monkeypatch):
    monkeypatch.delenv(REGISTRY_VAR, raising=False)
    spec = RunSpec(environment_manifest="env0@outage", state=json.dumps({"name": "env0@prod", "tools": ["gmail", "gcal"]}))
    binding = bind(spec)
    assert (binding.flag, binding.spec, binding.tools) == ("--state", "env0@prod", ("gmail", "gcal"))
    assert [s.name for s in binding.manifest.services] == ["mock-gmail", "mock-gcal"]
    assert binding.record()["services"] == ["mock-gmail", "mock-gcal"] and binding.record()["tools"] == ["gmail", "gcal"]
    assert bind(RunSpec(state="env0@outage")).spec == "env0@outage"  # a plain spec works as --state too


@pytest.mark.parametrize(("state", "says"), [
    ('{"name": "env0", "tools": ["teams"]}', "tools teams name no single service of env-0"),
    ('{"name": "env0", "tools": []}', '"tools" must be a non-empty list'),
    ('{"name": "env0", "tool": ["gmail"]}', 'the JSON takes "name"'),
    ('{"name": "env0"', "--state: not valid JSON"),
    ("no/such/environment.toml", "--state no/such/environment.toml: no such file"),
])
def test_a_state_that_binds_nothing_is_refused_in_one_line(state, says, monkeypatch):
    monkeypatch.delenv(REGISTRY_VAR, raising=False)
    with pytest.raises(ConfigError) as refused:
        bind(RunSpec.model_construct(state=state, environment_manifest=None))
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_services_get_the_task_name_and_only_the_forwarded_host_variables_that_are_set(tmp_path, monkeypatch):
    monkeypatch.setenv("MINI_TOKEN", "t0ken")
    monkeypatch.delenv("MINI_UNSET", raising=False)
    binding = bind(RunSpec(environment_manifest=str(_write(tmp_path / "environment.toml", SERVICES_TOML))))
    assert binding.spec is None and binding.path == (tmp_path / "environment.toml").resolve()
    assert service_env(binding, "task-a") == {"MINI_TASK": "task-a", "MINI_TOKEN": "t0ken"}
    assert "t0ken" not in json.dumps(binding.record())  # the value is never recorded
