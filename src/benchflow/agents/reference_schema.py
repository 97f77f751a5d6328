"""The reference's agent schema (contracts §5.1) read into ours, and ours printed in it.

Users bring agent files written for BenchFlow's own registry: flat keys such as
``install_cmd``, ``launch_cmd``, ``env_mapping``, ``subscription_auth``. Such an
entry is recognised by ``install_cmd``/``launch_cmd`` and mapped onto
:class:`~benchflow.agents.agent_config.AgentConfig`; every key is either
honoured or refused with a reason naming the file, the key and the fix.

Two behaviours of the reference are kept exactly by wrapping its commands in
``bash -c``: its install command runs as plain bash (ours runs recipe scripts
under ``set -eu``, which would stop at a deliberately non-fatal step), and its
launch command is a bash command line (ours is prefixed with ``exec``, which
only suits a simple command). :func:`to_reference` unwraps them again.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchflow.errors import ConfigError

from .agent_config import AgentConfig

REFERENCE_KEYS = (
    "name", "install_cmd", "launch_cmd", "protocol", "session_factory", "requires_env", "description",
    "skill_paths", "install_timeout", "default_model", "api_protocol", "env_mapping", "credential_files",
    "home_dirs", "acp_model_format", "subscription_auth", "supports_acp_set_model", "acp_model_config_id",
    "acp_effort_config_id", "disallow_web_tools_setup_cmd", "disallow_web_tools_owned_paths",
    "disallow_web_tools_launch_suffix", "task_mcp_transport", "task_mcp_config_path",
)
"""Every key of a reference registry entry (contracts §5.1)."""

_OURS_ONLY = ("install", "launch", "gateway", "model", "effort", "subscription", "api_key_env", "native", "env")
_API_PROTOCOLS = ("", "anthropic-messages", "openai-completions", "openai-responses")
_MODEL_FORMATS = ("bare", "provider/model", "registered-provider/model")
_MAPPABLE = {"BENCHFLOW_PROVIDER_BASE_URL": "base_url_env", "BENCHFLOW_PROVIDER_API_KEY": "api_key_env",
             "BENCHFLOW_PROVIDER_MODEL": "model_env"}
_SIMPLE_COMMAND = re.compile(r"^[A-Za-z0-9_./:@%+,-]+( [A-Za-z0-9_./:=@%+,-]+)*$")
"""A command ``exec`` can prefix as it is: plain words, no leading ``VAR=value``, no shell syntax."""
_GEMINI_URL_ENV = ("GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL")


def is_reference_entry(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` is written in the reference's schema (it has ``install_cmd`` or ``launch_cmd``)."""
    return "install_cmd" in entry or "launch_cmd" in entry


class _Refusal(Exception):
    """Not a BenchError: a private signal, turned into a ConfigError naming the key by its one caller."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(reason)
        self.key, self.reason = key, reason


def from_reference(entry: Mapping[str, Any], path: Path, prefix: str = "") -> dict[str, Any]:
    """``entry`` (reference schema) as a dict of our schema, ready for ``AgentConfig.model_validate``.

    Raises:
        ConfigError: a key this version refuses, or a value of the wrong shape; the message names
            ``path``, the key (under ``prefix`` for ``[agents.NAME]`` tables) and the fix.
    """
    try:
        return _convert(dict(entry))
    except _Refusal as exc:
        key = f"{prefix}.{exc.key}" if prefix else exc.key
        raise ConfigError(f"{path}: key {key}: {exc.reason} (reference agent schema, contracts §5.1)") from None


def _convert(entry: dict[str, Any]) -> dict[str, Any]:
    mixed = [key for key in _OURS_ONLY if key in entry]
    if mixed:
        raise _Refusal(mixed[0], "belongs to BenchFlow's own schema, but this entry uses the reference's "
                                 "(install_cmd/launch_cmd); write the entry in one schema only")
    unknown = [key for key in entry if key not in REFERENCE_KEYS]
    if unknown:
        raise _Refusal(unknown[0], "not a key of the reference's agent schema; remove it or fix its spelling")
    protocol = _text(entry, "protocol", "acp")
    if protocol in ("cli", "session-factory"):
        raise _Refusal("protocol", f"{protocol!r} agents are not supported (this version drives agents over "
                                   "ACP on stdio); give a launch_cmd that speaks ACP and protocol = \"acp\"")
    if protocol != "acp":
        raise _Refusal("protocol", f"{protocol!r} is not one of acp, cli, session-factory; use \"acp\"")
    if _text(entry, "session_factory", ""):
        raise _Refusal("session_factory", "in-process Python agents are not supported; remove it and give "
                                          "an ACP launch_cmd")
    name = _text(entry, "name", "")
    if not name:
        raise _Refusal("name", "missing; add name = \"my-agent\"")
    out: dict[str, Any] = {"name": name, "description": _text(entry, "description", ""), "protocol": "acp",
                           "install": _install(entry), "launch": _launch(entry),
                           "api_key_env": _strings(entry, "requires_env")}
    mapping = _env_mapping(entry)
    out["gateway"] = {"api": _api(entry, mapping), **mapping}
    out["model"] = _model(entry, bool(mapping.get("model_env")))
    effort_id = _text(entry, "acp_effort_config_id", "")
    if effort_id:
        out["effort"] = {"via": "config_option", "config_id": effort_id}
    out["credential_files"] = _credential_files(entry)
    out["home_dirs"] = _home_dirs(entry)
    login = _subscription(entry)
    if login is not None:
        out["subscription"] = login
    kept = {key: entry[key] for key in ("skill_paths", "disallow_web_tools_setup_cmd",
                                        "disallow_web_tools_owned_paths", "disallow_web_tools_launch_suffix",
                                        "task_mcp_transport", "task_mcp_config_path") if key in entry}
    if kept:
        _check_kept(kept)
        out["reference"] = kept
    return out


def _text(entry: Mapping[str, Any], key: str, default: str) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str):
        raise _Refusal(key, f"must be a string, not {type(value).__name__}; quote it")
    return value


def _strings(entry: Mapping[str, Any], key: str) -> list[str]:
    value = entry.get(key, [])
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Refusal(key, "must be a list of strings, e.g. [\"ANTHROPIC_API_KEY\"]")
    return list(value)


def _install(entry: Mapping[str, Any]) -> dict[str, Any]:
    command = _text(entry, "install_cmd", "")
    timeout = entry.get("install_timeout", 900)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise _Refusal("install_timeout", "must be a positive number of seconds, e.g. 900")
    if not command.strip():
        return {"kind": "none", "timeout_sec": float(timeout)}
    return {"kind": "script", "script": f"bash -c {shlex.quote(command)}", "timeout_sec": float(timeout)}


def _launch(entry: Mapping[str, Any]) -> str:
    command = _text(entry, "launch_cmd", "").strip()
    if not command:
        raise _Refusal("launch_cmd", "missing or empty; give the command that starts the agent's ACP server")
    return command if _SIMPLE_COMMAND.match(command) else f"bash -c {shlex.quote(command)}"


def _env_mapping(entry: Mapping[str, Any]) -> dict[str, list[str]]:
    raw = entry.get("env_mapping", {})
    if not isinstance(raw, dict):
        raise _Refusal("env_mapping", "must be a table of BENCHFLOW_PROVIDER_* = \"AGENT_VAR\"")
    out: dict[str, list[str]] = {}
    for source, target in raw.items():
        where = f"env_mapping.{source}"
        if not isinstance(target, str) or not target:
            raise _Refusal(where, "must name the agent's variable, e.g. \"ANTHROPIC_BASE_URL\"")
        if source not in _MAPPABLE:
            if source.startswith("BENCHFLOW_PROVIDER_"):
                raise _Refusal(where, f"only BASE_URL, API_KEY and MODEL can be mapped; the agent gets {source} "
                                      f"itself, so set {target}=${source} in launch_cmd instead")
            raise _Refusal(where, "keys must start with BENCHFLOW_PROVIDER_ (BASE_URL, API_KEY or MODEL)")
        out.setdefault(_MAPPABLE[source], []).append(target)
    return out


def _api(entry: Mapping[str, Any], mapping: Mapping[str, list[str]]) -> str:
    api = _text(entry, "api_protocol", "")
    if api not in _API_PROTOCOLS:
        raise _Refusal("api_protocol", f"{api!r} is not one of {', '.join(repr(a) for a in _API_PROTOCOLS)}")
    if api:
        return api
    # "" lets the provider decide; the base-URL variable the agent reads tells which wire protocol it is
    url_env = mapping.get("base_url_env", [])
    if "ANTHROPIC_BASE_URL" in url_env:
        return "anthropic-messages"
    if any(name in _GEMINI_URL_ENV for name in url_env):
        return "gemini"
    return "openai-completions"


def _model(entry: Mapping[str, Any], model_mapped: bool) -> dict[str, Any]:
    fmt = _text(entry, "acp_model_format", "bare")
    if fmt not in _MODEL_FORMATS:
        raise _Refusal("acp_model_format", f"{fmt!r} is not one of {', '.join(_MODEL_FORMATS)}")
    set_model = entry.get("supports_acp_set_model", True)
    if not isinstance(set_model, bool):
        raise _Refusal("supports_acp_set_model", "must be true or false")
    config_id = _text(entry, "acp_model_config_id", "")
    model: dict[str, Any] = {"format": fmt, "default": _text(entry, "default_model", "") or None}
    if model_mapped and not set_model:
        model["via"] = "env"  # the environment owns the model: no ACP model call (contracts §5.4 step 3)
    else:
        model.update(via="config_option", config_id=config_id or "model")
    return model


def _credential_files(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = entry.get("credential_files", [])
    if not isinstance(raw, list):
        raise _Refusal("credential_files", "must be a list of tables {path, env_source, template, mkdir}")
    files = []
    for i, spec in enumerate(raw):
        where = f"credential_files[{i}]"
        if not isinstance(spec, dict):
            raise _Refusal(where, "must be a table {path, env_source, template, mkdir}")
        extra = sorted(set(spec) - {"path", "env_source", "template", "mkdir"})
        if extra:
            raise _Refusal(f"{where}.{extra[0]}", "not a credential file key (path, env_source, template, mkdir)")
        path, source = _text(spec, "path", ""), _text(spec, "env_source", "")
        if not path or not source:
            raise _Refusal(where, "needs path and env_source")
        if not isinstance(spec.get("mkdir", True), bool):
            raise _Refusal(f"{where}.mkdir", "must be true or false")
        # mkdir: this version always creates the file's folder, so both values write the file
        files.append({"path": path, "env_source": source,
                      "template": _template(_text(spec, "template", ""), f"{where}.template")})
    return files


def _template(template: str, where: str) -> str:
    """A reference template (a Python format string with ``{value}``; "" = the raw value) as ours
    (``{value}`` replaced, every other character literal)."""
    if not template:
        return "{value}"
    out = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise _Refusal(where, f"not a valid template ({exc}); write braces as {{{{ and }}}}") from None
    for literal, field, spec, conversion in parsed:
        if "{value}" in literal:
            raise _Refusal(where, "contains an escaped {{value}}, which this version would fill in; remove it")
        out.append(literal)
        if field is None:
            continue
        if field != "value" or spec or conversion:
            raise _Refusal(where, f"placeholder {{{field}}} is not {{value}}; write literal braces as {{{{ }}}}")
        out.append("{value}")
    return "".join(out)


def _home_dirs(entry: Mapping[str, Any]) -> list[str]:
    dirs = _strings(entry, "home_dirs")
    for d in dirs:
        if d.startswith("/") or ".." in d.split("/"):
            raise _Refusal("home_dirs", f"{d!r} must be a folder under the home, such as \".openclaw\"")
    return dirs


def _subscription(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    raw = entry.get("subscription_auth")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _Refusal("subscription_auth", "must be a table {replaces_env, detect_file, files}")
    extra = sorted(set(raw) - {"replaces_env", "detect_file", "files"})
    if extra:
        raise _Refusal(f"subscription_auth.{extra[0]}", "not a key of subscription_auth "
                                                         "(replaces_env, detect_file, files)")
    detect = _text(raw, "detect_file", "")
    if not detect:
        raise _Refusal("subscription_auth.detect_file", "missing; name the host file that shows a login")
    replaces = _strings(raw, "replaces_env")
    files = raw.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        raise _Refusal("subscription_auth.files", "must be a list of tables {host_path, container_path}")
    host_files = [detect]
    folders = set()
    for i, item in enumerate(files):
        where = f"subscription_auth.files[{i}]"
        host, container = _text(item, "host_path", ""), _text(item, "container_path", "")
        if not host or not container:
            raise _Refusal(where, "needs host_path and container_path")
        folder, base = posixpath.split(container)
        if not folder.startswith("{home}/") or base != posixpath.basename(host):
            raise _Refusal(f"{where}.container_path", "this version copies a login file to {home}/<folder>/"
                                                      "<same file name>; write it as \"{home}/.x/" +
                                                      posixpath.basename(host) + "\"")
        folders.add(folder[len("{home}/"):])
        if host not in host_files:
            host_files.append(host)
    if len(folders) > 1:
        raise _Refusal("subscription_auth.files", f"copies into several folders ({', '.join(sorted(folders))}); "
                                                  "this version copies a login into one folder under the home")
    folder = folders.pop() if folders else posixpath.basename(posixpath.dirname(detect.replace("~/", "", 1)))
    if not folder:
        raise _Refusal("subscription_auth.files", "gives no folder under the home to copy the login to; "
                                                  "add files = [{host_path, container_path = \"{home}/.x/f\"}]")
    return {"host_files": host_files, "container_dir": folder, "replaces_env": replaces}


def _check_kept(kept: Mapping[str, Any]) -> None:
    for key in ("skill_paths", "disallow_web_tools_owned_paths"):
        if key in kept:
            _strings(kept, key)
    for key in ("disallow_web_tools_setup_cmd", "disallow_web_tools_launch_suffix", "task_mcp_config_path"):
        if key in kept:
            _text(kept, key, "")
    if kept.get("task_mcp_transport", "acp") not in ("acp", "native-config"):
        raise _Refusal("task_mcp_transport", "must be \"acp\" or \"native-config\"")


# --- ours → the reference ----------------------------------------------------------------------

def _unwrap(command: str) -> str | None:
    """``X`` when ``command`` is exactly ``bash -c X`` (as :func:`from_reference` writes it)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 3 and words[:2] == ["bash", "-c"] and command == f"bash -c {shlex.quote(words[2])}":
        return words[2]
    return None


def _reference_template(template: str) -> str:
    parts = template.split("{value}")
    return "{value}".join(p.replace("{", "{{").replace("}", "}}") for p in parts)


def to_reference(config: AgentConfig) -> dict[str, Any]:
    """``config`` as a registry entry in the reference's schema (contracts §5.1).

    The install becomes the whole bash script this version runs (``install_cmd``), so the entry
    installs the same way there. What the reference cannot express is left out: aliases, fixed
    ``env`` variables, ``--harness native`` and a second target variable per ``env_mapping`` key.
    """
    from .install import install_script

    recipe = config.install
    if recipe.kind == "none":
        install_cmd = ""
    else:
        install_cmd = (_unwrap(recipe.script) if recipe.kind == "script" else None) or install_script(config)
    gw, model, kept = config.gateway, config.model, config.reference
    mapping = {source: getattr(gw, field)[0] for source, field in _MAPPABLE.items() if getattr(gw, field)}
    entry: dict[str, Any] = {
        "name": config.name, "description": config.description, "install_cmd": install_cmd,
        "launch_cmd": _unwrap(config.launch) or config.launch, "protocol": "acp",
        "requires_env": list(config.api_key_env), "install_timeout": int(recipe.timeout_sec),
        "default_model": model.default or "", "api_protocol": "" if gw.api == "gemini" else gw.api,
        "env_mapping": mapping,
        "credential_files": [{"path": f.path, "env_source": f.env_source,
                              "template": _reference_template(f.template), "mkdir": True}
                             for f in config.credential_files],
        "home_dirs": list(config.home_dirs), "acp_model_format": model.format,
        "supports_acp_set_model": model.via in ("config_option", "set_model"),
        "acp_model_config_id": model.config_id if model.via == "config_option" else "",
        "acp_effort_config_id": config.effort.config_id if config.effort.via == "config_option" else "",
    }
    login = config.subscription
    if login is not None:
        entry["subscription_auth"] = {
            "replaces_env": login.replaces_env[0] if len(login.replaces_env) == 1 else list(login.replaces_env),
            "detect_file": login.host_files[0],
            "files": [{"host_path": f, "container_path": f"{{home}}/{login.container_dir}/{posixpath.basename(f)}"}
                      for f in login.host_files]}
    if kept is not None:
        entry.update(kept.model_dump())
    return entry
