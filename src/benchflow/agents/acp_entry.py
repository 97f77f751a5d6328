"""An ACP registry entry (:mod:`.acp_registry`) as a registry agent (:class:`.agent_config.AgentConfig`).

The distribution, in Harbor's order of preference: a Linux ``binary`` (the archive for the sandbox's
``uname -m``, checked against its ``sha256`` when the entry gives one), else ``npx`` (the npm package
into ``/opt/benchflow/js-agents``, launched by the command ``npx`` would pick), else ``uvx`` (the PyPI
package into a venv, launched by its command of the package's name). The package is pinned to the
entry's version when the entry leaves it unpinned. The launcher is ``/opt/benchflow/bin/acp-<id>``
(``uvx``: the package's own command), with the entry's ``args`` and ``env``.

How the model gateway reaches the agent is not in the registry. A built-in agent that installs the
same npm or PyPI package, or is named by the entry's id, lends its wiring (gateway variables, model and
effort selection, credentials, skill folders); any other agent gets OpenAI-compatible variables
(``OPENAI_BASE_URL``/``OPENAI_API_KEY``) and the model as ACP's ``model`` config option. An agent
wired otherwise is described by an agent file (``-a ./agent.toml``) instead.
"""

from __future__ import annotations

import re
import shlex

from .acp_registry import BinaryTarget, PackageDistribution, RegistryEntry
from .agent_config import PREFIX, AgentConfig, GatewayMapping, InstallRecipe

GENERIC_GATEWAY = GatewayMapping(api="openai-completions", base_url_env=["OPENAI_BASE_URL"], base_url_suffix="/v1",
                                 api_key_env=["OPENAI_API_KEY"])
ARCHES = {"linux-x86_64": "x86_64", "linux-aarch64": "aarch64|arm64"}
"""Registry platform keys a sandbox can run, with the ``uname -m`` values each stands for."""


def agent_config(entry: RegistryEntry, builtins: tuple[AgentConfig, ...]) -> AgentConfig:
    """The agent ``entry`` describes, wired as the built-in that shares its package or name, if any."""
    dist = entry.distribution
    targets = {key: target for key, target in (dist.binary or {}).items() if key in ARCHES}
    if targets:
        install, launch, extra = _binary(entry, targets), _launcher(entry), next(iter(targets.values()))
    elif dist.npx is not None:
        install, launch, extra = _npx(entry, dist.npx), _launcher(entry), dist.npx
    elif dist.uvx is not None:
        install, extra = _uvx(entry, dist.uvx), dist.uvx
        launch = f"{PREFIX}/bin/{install.bins[0]}"
    else:
        from benchflow.errors import ConfigError

        kinds = sorted(dist.binary or {}) or ["none"]
        raise ConfigError(f"agent acp:{entry.id}@{entry.version}: no distribution a Linux sandbox can run "
                          f"(binary for {', '.join(kinds)}; no npx or uvx)")
    launch = " ".join([launch, *(shlex.quote(a) for a in extra.args)])
    twin = _twin(entry, install, builtins)
    wiring = twin.model_dump(exclude={"name", "description", "aliases", "protocol", "install", "launch", "env",
                                      "native", "reference", "unavailable_reason"}) if twin else {
        "gateway": GENERIC_GATEWAY.model_dump()}
    return AgentConfig.model_validate({
        **wiring, "name": entry.id, "install": install.model_dump(), "launch": launch,
        "description": f"ACP registry agent {entry.id}@{entry.version}"
                       + (f" (wired as the built-in {twin.name})" if twin else ""),
        "env": {**(twin.env if twin else {}), **extra.env}})


def _package_name(package: str, npm: bool) -> str:
    """``@scope/name@1.2`` -> ``@scope/name`` (npm); ``name==1.2`` / ``name@1.2`` / ``name[x]`` -> ``name``."""
    if npm:
        scope, _, rest = package.partition("/") if package.startswith("@") else ("", "", package)
        return f"{scope}/{rest.partition('@')[0]}" if scope else rest.partition("@")[0]
    return re.split(r"[=<>~!@\[\s;]", package, maxsplit=1)[0]


def _npx(entry: RegistryEntry, dist: PackageDistribution) -> InstallRecipe:
    name = _package_name(dist.package, npm=True)
    pinned = dist.package if dist.package != name else f"{name}@{entry.version}"
    # npx's own choice of command: the package's only bin, else the one named as the package (unscoped)
    pick = ("const p=require(process.argv[1]+'/package.json'),b=p.bin,base=p.name.split('/').pop();"
            "if(typeof b==='string')console.log(base);else if(b){const k=Object.keys(b);"
            "console.log(k.length===1?k[0]:(b[base]?base:''))}")
    target = f"$P/bin/acp-{entry.id}"
    script = "\n".join([
        f'bin="$("$NODE" -e {shlex.quote(pick)} "$P/js-agents/node_modules/{name}")"',
        f'[ -n "$bin" ] || {{ echo "install failed: {name} has no single command for npx to run" >&2; exit 1; }}',
        f'printf \'#!/bin/sh\\nPATH="%s:$PATH" exec "%s" "$@"\\n\' "$NODE_DIR" '
        f'"$P/js-agents/node_modules/.bin/$bin" > "{target}"',
        f'chmod 0755 "{target}"'])
    return InstallRecipe(kind="npm", packages=[pinned], script=script)


def _uvx(entry: RegistryEntry, dist: PackageDistribution) -> InstallRecipe:
    name = _package_name(dist.package, npm=False)
    spec = dist.package.replace("@", "==", 1) if "@" in dist.package and "==" not in dist.package else dist.package
    pinned = spec if spec != name else f"{name}=={entry.version}"
    return InstallRecipe(kind="pip", packages=[pinned], bins=[name])


def _binary(entry: RegistryEntry, targets: dict[str, BinaryTarget]) -> InstallRecipe:
    folder = f"$P/acp/{entry.id}"
    cases = [f'  {ARCHES[key]}) url={shlex.quote(t.archive)}; sum={shlex.quote(t.sha256 or "")}; '
             f'cmd={shlex.quote(t.cmd.removeprefix("./"))} ;;' for key, t in targets.items()]
    body = "\n".join([
        'case "$(uname -m)" in', *cases,
        f'  *) echo "install failed: acp:{entry.id} has no binary for linux-$(uname -m)" >&2; exit 1 ;;', 'esac',
        f'd="{folder}"; rm -rf "$d"; mkdir -p "$d/dist"; tmp="$(mktemp)"',
        'if command -v curl >/dev/null 2>&1; then curl -fsSL "$url" -o "$tmp"',
        'elif command -v wget >/dev/null 2>&1; then wget -qO "$tmp" "$url"',
        "elif command -v python3 >/dev/null 2>&1; then python3 -c 'import sys,urllib.request;"
        "urllib.request.urlretrieve(sys.argv[1],sys.argv[2])' \"$url\" \"$tmp\"",
        'else echo "install failed: no curl, wget or python3 in the image to fetch $url" >&2; exit 1; fi',
        'if [ -n "$sum" ] && [ "$(sha256sum "$tmp" | cut -d" " -f1)" != "${sum#sha256:}" ]; then',
        '  echo "install failed: $url does not match the registry\'s sha256" >&2; exit 1; fi',
        'case "$url" in',
        '  *.tar.gz|*.tgz) tar -xzf "$tmp" -C "$d/dist" ;;',
        '  *.tar.bz2|*.tbz2) tar -xjf "$tmp" -C "$d/dist" ;;',
        '  *.tar.xz|*.txz) tar -xJf "$tmp" -C "$d/dist" ;;',
        '  *.zip) python3 -m zipfile -e "$tmp" "$d/dist" 2>/dev/null || unzip -q "$tmp" -d "$d/dist" ;;',
        '  *) cp "$tmp" "$d/dist/$cmd" ;;', 'esac', 'rm -f "$tmp"; chmod 0755 "$d/dist/$cmd"',
        f'printf \'#!/bin/sh\\nexec "%s" "$@"\\n\' "$d/dist/$cmd" > "$P/bin/acp-{entry.id}"',
        f'chmod 0755 "$P/bin/acp-{entry.id}"'])
    script = f'if [ ! -x "$P/bin/acp-{entry.id}" ]; then\n{body}\nfi'  # idempotent, as every install is
    return InstallRecipe(kind="script", script=script)


def _launcher(entry: RegistryEntry) -> str:
    return f"{PREFIX}/bin/acp-{entry.id}"


def _twin(entry: RegistryEntry, install: InstallRecipe, builtins: tuple[AgentConfig, ...]) -> AgentConfig | None:
    """The built-in agent installing the same package (or, failing that, named as the entry)."""
    npm = install.kind == "npm"
    wanted = {_package_name(p, npm) for p in install.packages}
    for config in builtins:
        if config.install.kind == install.kind and wanted & {_package_name(p, npm) for p in config.install.packages}:
            return config
    return next((c for c in builtins if entry.id == c.name or entry.id in c.aliases), None)
