#!/usr/bin/env python3
"""A test double of Apple's ``container`` CLI (github.com/apple/container), backed by the local Docker engine.

It takes the real CLI's arguments for the commands the ``apple-container``
backend uses and prints what the real CLI prints, so that backend runs
unchanged on a machine without macOS: each Apple container is a Docker
container named by the Apple id (``--name``) and labelled
``benchflow-apple-container-double=1`` (so ``list`` shows only the double's);
it shows the labels it was made with, not the image's that Docker adds.

- ``system status`` (exit 0 while the engine answers), ``--version``;
- ``build`` (``--tag``, ``--file``, ``--label``, ``--progress``, ``--no-cache``,
  ``--build-arg``, ``--cpus``/``--memory`` of the builder ignored), ``image
  inspect|pull|delete``;
- ``run``/``create`` (``--detach``, ``--name``, ``--label``, ``--network``
  ``none``/``default``/a name, ``--cpus``, ``--memory`` with its K/M/G/T/P
  suffixes, ``--env KEY[=VALUE]`` (a bare key is copied from this process's
  environment, as the real CLI does), ``--entrypoint``, ``--workdir``,
  ``--user``, ``--interactive``, ``--tty``), ``start``, ``stop`` (``--time``,
  ``--signal``), ``kill``, ``delete``/``rm`` (``--force``);
- ``exec`` (``--interactive``, ``--tty``, ``--user``, ``--uid``/``--gid``,
  ``--workdir``, ``--env``), which becomes the ``docker exec`` process itself
  (stdio passed through, its exit status the command's);
- ``logs`` (``-n``, ``--follow``): what the container's first process wrote
  on its stdout and stderr;
- ``list``/``ls`` (``--all``, ``--format json``, ``--quiet``) and ``inspect``:
  JSON arrays of the 0.x releases' container snapshot (``configuration`` with
  ``id``, ``image.reference``, ``labels``, ``resources``, ``initProcess``,
  ``platform``, ``networks``; ``status`` the state string; ``networks`` the
  attachments; ``startedDate`` seconds since 2001-01-01, Swift's ``Date``).

Errors are one ``Error: …`` line on stderr and exit status 1, as the real CLI
prints them. Not doubled: the VM itself (a Docker container shares this
host's kernel), and the ``default`` network on an engine without a bridge
network, which is then no network. The Docker CLI it runs is
``$APPLE_CONTAINER_DOUBLE_DOCKER`` (default: ``docker`` on PATH).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime

LABEL = "benchflow-apple-container-double"
GIVEN = f"{LABEL}.labels"
"""The labels the container was made with, as JSON: the only ones ``list`` and ``inspect`` show."""
SWIFT_EPOCH = 978307200
VERSION = "container CLI version 0.6.0 (double of tests/doubles/apple_container_cli_double.py)"
DOCKER = os.environ.get("APPLE_CONTAINER_DOUBLE_DOCKER", "docker")

VALUE_FLAGS = {
    "--tag", "--file", "--label", "--progress", "--build-arg", "--cpus", "--memory", "--name", "--network", "--env",
    "--entrypoint", "--workdir", "--user", "--uid", "--gid", "--format", "--signal", "--time", "--arch", "--os",
    "--platform", "--env-file", "--target", "--output", "--scheme", "-n",
}
"""The long options that take a value (the backend uses long options only; a few unambiguous short ones
are understood too)."""
ALIASES = {"-f": "--file", "-l": "--label", "-c": "--cpus", "-m": "--memory", "-e": "--env", "-w": "--workdir",
           "--cwd": "--workdir", "-u": "--user", "-d": "--detach", "-i": "--interactive", "-q": "--quiet",
           "--rm": "--remove"}


def fail(message: str, code: int = 1) -> None:
    print(f"Error: {message}", file=sys.stderr)
    sys.exit(code)


def parse(args: list[str], positionals: int) -> tuple[dict[str, list[str]], list[str]]:
    """Options (long names, every value kept) and positionals; after ``positionals`` of them, the rest
    passes through untouched (the CLI's ``captureForPassthrough``); 0: no pass-through."""
    opts: dict[str, list[str]] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if positionals and len(rest) >= positionals:
            rest.extend(args[i:])
            break
        if word.startswith("-") and word != "-":
            name, eq, value = word.partition("=")
            name = ALIASES.get(name, name)
            if name in VALUE_FLAGS:
                if not eq:
                    i += 1
                    if i >= len(args):
                        fail(f"missing value for {word}")
                    value = args[i]
                opts.setdefault(name, []).append(value)
            else:
                opts.setdefault(name, []).append("true")
        else:
            rest.append(word)
        i += 1
    return opts, rest


def docker(*args: str, capture: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([DOCKER, *args], capture_output=capture, text=True, check=False)


def must(done: subprocess.CompletedProcess) -> str:
    if done.returncode != 0:
        lines = (done.stderr or done.stdout or "").strip().splitlines() or [f"exit {done.returncode}"]
        fail(lines[-1].removeprefix("Error response from daemon: ").removeprefix("Error: "))
    return done.stdout


def owned(name: str) -> dict | None:
    done = docker("container", "inspect", name)
    if done.returncode != 0:
        return None
    item = json.loads(done.stdout)[0]
    return item if (item["Config"].get("Labels") or {}).get(LABEL) == "1" else None


def memory_bytes(text: str) -> str:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
    text = text.strip().lower().removesuffix("b").removesuffix("i")
    scale = units.get(text[-1:], 1 << 20)
    number = text[:-1] if text[-1:] in units else text
    if not number.isdigit():
        fail(f"invalid memory value {text!r}")
    return str(int(number) * scale)


def env_args(values: list[str]) -> list[str]:
    """``--env KEY`` stays a bare key: Docker's CLI copies the value from its environment (this one's) too."""
    return [word for item in values for word in ("--env", item)]


def user_args(opts: dict[str, list[str]]) -> list[str]:
    if "--user" in opts:
        return ["--user", opts["--user"][-1]]
    if "--uid" in opts:
        return ["--user", f"{opts['--uid'][-1]}:{opts.get('--gid', ['0'])[-1]}"]
    return []


def has_bridge() -> bool:
    return docker("network", "inspect", "bridge").returncode == 0


def cmd_create(args: list[str], *, run: bool) -> None:
    opts, rest = parse(args, 1)
    if not rest:
        fail("missing expected argument '<image>'")
    image, process = rest[0], rest[1:]
    name = opts.get("--name", [None])[-1]
    out = ["run", "--detach"] if run and "--detach" in opts else (["run"] if run else ["create"])
    out += ["--label", f"{LABEL}=1", "--init"]
    if name:
        out += ["--name", name]
    given = dict(label.partition("=")[::2] for label in opts.get("--label", []))
    for key, value in given.items():
        out += ["--label", f"{key}={value}"]
    out += ["--label", f"{GIVEN}={json.dumps(given)}"]  # Docker adds the image's labels; Apple's CLI does not
    network = opts.get("--network", ["default"])[-1]
    if network == "none" or (network == "default" and not has_bridge()):
        out += ["--network", "none"]
    elif network != "default":
        out += ["--network", network]
    if "--cpus" in opts:
        if not opts["--cpus"][-1].isdigit():
            fail(f"invalid value for --cpus: {opts['--cpus'][-1]!r} (a whole number)")
        out += ["--cpus", opts["--cpus"][-1]]
    if "--memory" in opts:
        out += ["--memory", memory_bytes(opts["--memory"][-1])]
    out += env_args(opts.get("--env", [])) + user_args(opts)
    if "--workdir" in opts:
        out += ["--workdir", opts["--workdir"][-1]]
    if "--entrypoint" in opts:
        out += ["--entrypoint", opts["--entrypoint"][-1]]
    for flag in ("--interactive", "--tty"):
        if flag in opts:
            out.append(flag)
    if docker("image", "inspect", image).returncode != 0:
        must(docker("pull", image))
    made = must(docker(*out, image, *process)).strip()
    print(name or made)


def cmd_exec(args: list[str]) -> None:
    opts, rest = parse(args, 1)
    if len(rest) < 2:
        fail("missing expected argument '<arguments>'")
    name, process = rest[0], rest[1:]
    item = owned(name)
    if item is None:
        fail(f'notFound: "container with ID {name} not found"')
    if not item["State"]["Running"]:
        fail(f"invalidState: \"container {name} is not running\"")
    out = [DOCKER, "exec"] + [flag for flag in ("--interactive", "--tty") if flag in opts]
    out += env_args(opts.get("--env", [])) + user_args(opts)
    if "--workdir" in opts:
        out += ["--workdir", opts["--workdir"][-1]]
    sys.stdout.flush()
    os.execvp(DOCKER, [*out, name, *process])


def snapshot(item: dict) -> dict:
    """One container as the 0.x CLI prints it in ``list --format json`` and ``inspect``."""
    config, state = item["Config"], item["State"]
    labels = json.loads((config.get("Labels") or {}).get(GIVEN) or "{}")
    host = item["HostConfig"]
    started = None
    if state.get("StartedAt", "").startswith(("19", "20")) and not state["StartedAt"].startswith("0001"):
        stamp = datetime.fromisoformat(state["StartedAt"][:26].rstrip("Z") + "Z")
        started = stamp.timestamp() - SWIFT_EPOCH
    running = state["Running"]
    network = "none" if host.get("NetworkMode") == "none" else "default"
    argv = (config.get("Entrypoint") or []) + (config.get("Cmd") or [])
    return {
        "status": "running" if running else "stopped",
        "configuration": {
            "id": item["Name"].lstrip("/"),
            "image": {"reference": config["Image"], "descriptor": {
                "mediaType": "application/vnd.oci.image.index.v1+json", "digest": item["Image"], "size": 0}},
            "labels": labels, "mounts": [], "publishedPorts": [], "publishedSockets": [], "sysctls": {},
            "networks": [] if network == "none" else [{"network": "default", "options": {"hostname": item["Name"][1:]}}],
            "dns": None if network == "none" else {"nameservers": ["192.168.64.1"], "searchDomains": [], "options": []},
            "rosetta": False, "runtimeHandler": "container-runtime-linux", "virtualization": False, "ssh": False,
            "readOnly": False,
            "initProcess": {"executable": argv[0] if argv else "", "arguments": argv[1:],
                            "environment": config.get("Env") or [], "workingDirectory": config.get("WorkingDir") or "/",
                            "terminal": False, "user": {"raw": {"userString": config.get("User") or ""}},
                            "supplementalGroups": [], "rlimits": []},
            "platform": {"os": "linux", "architecture": "arm64"},
            "resources": {"cpus": int((host.get("NanoCpus") or 4_000_000_000) // 1_000_000_000),
                          "memoryInBytes": host.get("Memory") or 1 << 30},
        },
        "networks": [] if network == "none" or not running else [
            {"network": "default", "hostname": item["Name"][1:], "address": "192.168.64.2/24",
             "gateway": "192.168.64.1"}],
        **({"startedDate": started} if started is not None and running else {}),
    }


def cmd_list(args: list[str]) -> None:
    opts, _ = parse(args, 0)
    names = must(docker("ps", "--all", "--filter", f"label={LABEL}=1", "--format", "{{.Names}}")).split()
    items = []
    if names:
        items = [snapshot(item) for item in json.loads(must(docker("container", "inspect", *names)))]
    if "--all" not in opts:
        items = [item for item in items if item["status"] == "running"]
    if opts.get("--format", ["table"])[-1] == "json":
        print(json.dumps(items))
    elif "--quiet" in opts:
        for item in items:
            print(item["configuration"]["id"])
    else:
        print("ID  IMAGE  OS  ARCH  STATE  ADDR")
        for item in items:
            config = item["configuration"]
            print(f"{config['id']}  {config['image']['reference']}  linux  arm64  {item['status']}")


def cmd_inspect(args: list[str]) -> None:
    _, names = parse(args, 0)
    found = []
    for name in names:
        item = owned(name)
        if item is None:
            fail(f'notFound: "container with ID {name} not found"')
        found.append(snapshot(item))
    print(json.dumps(found))


def cmd_delete(args: list[str]) -> None:
    opts, names = parse(args, 0)
    if "--all" in opts:
        names = must(docker("ps", "--all", "--filter", f"label={LABEL}=1", "--format", "{{.Names}}")).split()
    for name in names:
        item = owned(name)
        if item is None:
            fail(f'notFound: "container with ID {name} not found"')
        if item["State"]["Running"] and "--force" not in opts:
            fail(f'invalidState: "container {name} is running; stop it first or use --force"')
        must(docker("rm", "--force", name))
        print(name)


def cmd_simple(verb: str, args: list[str]) -> None:
    opts, names = parse(args, 0)
    passed = [word for key in ("--time", "--signal") if verb == "stop" and key in opts
              for word in (key, opts[key][-1])]
    for name in names:
        if owned(name) is None:
            fail(f'notFound: "container with ID {name} not found"')
        must(docker(verb, *passed, name))
        print(name)


def cmd_logs(args: list[str]) -> None:
    opts, names = parse(args, 0)
    if len(names) != 1:
        fail("missing expected argument '<container-id>'")
    if "--boot" in opts:
        fail("the double has no boot log (there is no VM)")
    if owned(names[0]) is None:
        fail(f'notFound: "container with ID {names[0]} not found"')
    out = [DOCKER, "logs"] + (["--follow"] if "--follow" in opts else [])
    out += ["--tail", opts["-n"][-1]] if "-n" in opts else []
    sys.stdout.flush()
    os.execvp(DOCKER, [*out, names[0]])


def cmd_build(args: list[str]) -> None:
    opts, rest = parse(args, 1)
    out = ["build", "--network", "host", "--force-rm"]  # a failed step leaves no container
    for tag in opts.get("--tag", []):
        out += ["--tag", tag]
    for key in ("--file", "--target"):
        if key in opts:
            out += [key, opts[key][-1]]
    for label in opts.get("--label", []):
        out += ["--label", label]
    for arg in opts.get("--build-arg", []):
        out += ["--build-arg", arg]
    if "--no-cache" in opts:
        out.append("--no-cache")
    if "--quiet" in opts:
        out.append("--quiet")
    done = subprocess.run([DOCKER, *out, rest[0] if rest else "."], check=False, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()] or ["build failed"]
        fail(lines[-1].removeprefix("ERROR: "))
    for tag in opts.get("--tag", []):
        print(f"Successfully built {tag}")


def cmd_image(args: list[str]) -> None:
    verb, rest = (args[0], args[1:]) if args else ("list", [])
    _, refs = parse(rest, 0)
    if verb == "inspect":
        found = []
        for ref in refs:
            done = docker("image", "inspect", ref)
            if done.returncode != 0:
                fail(f'notFound: "image {ref} not found"')
            found.append({"name": ref, "index": {"digest": json.loads(done.stdout)[0]["Id"]}, "variants": []})
        print(json.dumps(found))
    elif verb == "pull":
        must(docker("pull", refs[0]))
    elif verb in ("delete", "rm"):
        for ref in refs:
            must(docker("image", "rm", ref))
    else:
        fail(f"the double has no `image {verb}`")


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return
    verb, args = argv[0], argv[1:]
    if verb in ("--version", "-v"):
        print(VERSION)
    elif verb == "system":
        if args[:1] == ["status"]:
            if docker("info").returncode != 0:
                fail("apiserver is not running and not registered with launchd")
            print("apiserver is running")
        elif args[:1] == ["version"]:
            print(VERSION)
        else:
            fail(f"the double has no `system {' '.join(args[:1])}`")
    elif verb == "build":
        cmd_build(args)
    elif verb == "image":
        cmd_image(args)
    elif verb in ("run", "create"):
        cmd_create(args, run=verb == "run")
    elif verb == "start":
        cmd_simple("start", args)
    elif verb == "stop":
        cmd_simple("stop", args)
    elif verb == "kill":
        cmd_simple("kill", args)
    elif verb in ("delete", "rm"):
        cmd_delete(args)
    elif verb == "exec":
        cmd_exec(args)
    elif verb == "logs":
        cmd_logs(args)
    elif verb in ("list", "ls"):
        cmd_list(args)
    elif verb == "inspect":
        cmd_inspect(args)
    else:
        fail(f"unknown command {verb!r} (the double speaks only what the apple-container backend uses)")


def install(folder) -> dict[str, str]:
    """Put an executable ``container`` running this double into ``folder``; the environment that makes the
    ``apple-container`` backend use it (PATH first, and the backend's test hook for a non-macOS host)."""
    import shutil
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "container"
    dock = shutil.which("docker") or "docker"
    target.write_text(f"#!/bin/sh\nAPPLE_CONTAINER_DOUBLE_DOCKER={dock} exec {sys.executable} {Path(__file__).resolve()} "
                      '"$@"\n')
    target.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}", "BENCHFLOW_APPLE_CONTAINER_ANY_OS": "1"}


if __name__ == "__main__":
    main(sys.argv[1:])
