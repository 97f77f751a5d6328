"""Installing a registry agent: the recipe rendered as one bash script, run as root.

Everything goes under ``/opt/benchflow`` so the task's own files and tools are
untouched: npm agents in ``js-agents/`` (with Node and npm fetched from the npm
registry as the ``node-linux-<arch>`` and ``npm`` packages when the image has no
Node >= 20), pip agents in ``venvs/<name>``, and a launcher per binary in
``bin/``. The script is idempotent: a second run finds everything in place.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from benchflow.errors import AgentError
from benchflow.sandbox.base import Sandbox
from benchflow.util.atomic import write_text
from benchflow.util.redact import redact_text

from .agent_config import PREFIX, AgentConfig, InstallRecipe

NPM_VERSION = "10.9.3"

_FETCH = r'''
fetch() {  # fetch URL FILE with whatever the image has (a Debian/Ubuntu image without any gets curl from apt)
  if ! command -v curl >/dev/null 2>&1 && ! command -v wget >/dev/null 2>&1 && ! command -v python3 >/dev/null 2>&1 \
     && command -v apt-get >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl ca-certificates; } >/dev/null \
      || echo "install: apt-get could not install curl" >&2
  fi
  if command -v curl >/dev/null 2>&1; then curl -fsSL "$1" -o "$2"
  elif command -v wget >/dev/null 2>&1; then wget -qO "$2" "$1"
  elif command -v python3 >/dev/null 2>&1; then python3 -c 'import sys,urllib.request;urllib.request.urlretrieve(sys.argv[1],sys.argv[2])' "$1" "$2"
  else echo "install failed: no curl, wget or python3 in the image to fetch $1" >&2; return 1; fi
}
'''

_NODE = r'''
NODE=""
if command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge 20 ]; then
  NODE="$(command -v node)"
fi
if [ -x "$P/node/bin/node" ]; then NODE="$P/node/bin/node"; fi
if [ -z "$NODE" ]; then
  case "$(uname -m)" in x86_64) arch=x64 ;; aarch64|arm64) arch=arm64 ;; *) echo "install failed: no Node build for $(uname -m)" >&2; exit 1 ;; esac
  tmp="$(mktemp -d)"
  fetch "$REG/node-linux-$arch/-/node-linux-$arch-$NODE_VERSION.tgz" "$tmp/node.tgz"
  mkdir -p "$P/node" && tar -xzf "$tmp/node.tgz" -C "$P/node" --strip-components=1
  rm -rf "$tmp"
  NODE="$P/node/bin/node"
fi
NODE_DIR="$(dirname "$NODE")"
if [ -x "$NODE_DIR/npm" ]; then NPM="$NODE_DIR/npm"
elif [ -f "$P/npm/bin/npm-cli.js" ]; then NPM="$NODE $P/npm/bin/npm-cli.js"
elif [ "$NODE_DIR" != "$P/node/bin" ] && command -v npm >/dev/null 2>&1; then NPM="$(command -v npm)"
else
  tmp="$(mktemp -d)"
  fetch "$REG/npm/-/npm-$NPM_VERSION.tgz" "$tmp/npm.tgz"
  mkdir -p "$P/npm" && tar -xzf "$tmp/npm.tgz" -C "$P/npm" --strip-components=1
  rm -rf "$tmp"
  NPM="$NODE $P/npm/bin/npm-cli.js"
fi
'''


def _npm(recipe: InstallRecipe) -> str:
    pkgs = " ".join(shlex.quote(p) for p in recipe.packages)
    lines = [_FETCH, f"NODE_VERSION={shlex.quote(recipe.node_version)}", f"NPM_VERSION={NPM_VERSION}",
             'REG="${npm_config_registry:-https://registry.npmjs.org}"; REG="${REG%/}"', _NODE,
             'mkdir -p "$P/js-agents"',
             f'PATH="$NODE_DIR:$PATH" $NPM install --prefix "$P/js-agents" --no-audit --no-fund '
             f'--no-update-notifier --loglevel=warn {pkgs}']
    for binary in recipe.bins:
        target = f"$P/js-agents/node_modules/.bin/{binary}"
        lines.append(f'[ -e "{target}" ] || {{ echo "install failed: {binary} not found after npm install" >&2; exit 1; }}')
        lines.append(f'printf \'#!/bin/sh\\nPATH="%s:$PATH" exec "%s" "$@"\\n\' "$NODE_DIR" "{target}" > "$P/bin/{binary}"')
        lines.append(f'chmod 0755 "$P/bin/{binary}"')
    return "\n".join(lines)


def _pip(recipe: InstallRecipe, name: str) -> str:
    venv = f"$P/venvs/{name}"
    pkgs = " ".join(shlex.quote(p) for p in recipe.packages)
    lines = ['if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then '
             '{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends '
             'python3 python3-venv; } >/dev/null || echo "install: apt-get could not install python3-venv" >&2; fi',
             'command -v python3 >/dev/null || { echo "install failed: pip agents need python3 in the image" >&2; exit 1; }',
             f'[ -x "{venv}/bin/python" ] || python3 -m venv "{venv}"',
             f'"{venv}/bin/python" -m pip install --quiet --disable-pip-version-check {pkgs}']
    for binary in recipe.bins:
        lines.append(f'ln -sf "{venv}/bin/{binary}" "$P/bin/{binary}"')
    return "\n".join(lines)


def install_script(config: AgentConfig) -> str:
    """The bash script that installs ``config`` into ``/opt/benchflow`` (run as root)."""
    recipe = config.install
    parts = ["set -eu", f"P={PREFIX}", 'mkdir -p "$P/bin"']
    if recipe.kind == "npm":
        parts.append(_npm(recipe))
    elif recipe.kind == "pip":
        parts.append(_pip(recipe, config.name))
    if recipe.script.strip():
        parts.append(recipe.script.strip())
    parts.append('chmod -R a+rX "$P"')
    return "\n".join(parts) + "\n"


async def install_agent(sandbox: Sandbox, config: AgentConfig, log_path: Path,
                        env: dict[str, str] | None = None) -> None:
    """Run the install script as root with the recipe's timeout; log to ``log_path``.

    Raises:
        AgentError: category ``install_failure`` (non-zero exit or timeout).
    """
    if config.install.kind == "none":
        return
    timeout = config.install.timeout_sec
    result = await sandbox.exec(["bash", "-c", install_script(config)], user=None, env=env or {}, timeout=timeout)
    write_text(log_path, redact_text(result.stdout + ("\n--- stderr ---\n" + result.stderr if result.stderr else "")))
    if result.timed_out:
        raise AgentError(f"Agent {config.name} install failed: timed out after {timeout:g}s "
                         f"(see agent/install-stdout.txt)", category="install_failure")
    if result.return_code != 0:
        from .install_errors import install_failure_message

        ca_bundle = getattr(getattr(sandbox, "spec", None), "ca_bundle", None)
        raise AgentError(install_failure_message(config.name, f"failed with exit code {result.return_code}",
                                                 redact_text(f"{result.stdout}\n{result.stderr}"), ca_bundle),
                         category="install_failure")
