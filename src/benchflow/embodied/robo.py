#!/usr/bin/env python3
"""robo: how an agent drives the robot of an embodied task.

Standard library only: the file is copied as-is into agent images (``environment/robo``), where BenchFlow is not
installed. Each command sends one JSON request (episode wire protocol 2) to the episode server's Unix socket, found
in $ROBO_SOCKET, else $ROBOUSE_SOCKET, else the path written in ./.robouse/socket.

  robo info                                    the robot: action groups, skills, sensors, budgets
  robo status                                  finished?, outcome, steps used
  robo observe [--image] [--camera C|all]      the state; --image also saves camera PNGs and prints their paths
  robo act GROUP=V1,V2,... [GROUP=...] [--repeat N]
                                               one step (or N) commanding the named action groups; the groups
                                               you leave out follow their hold policy (see `robo info`)
  robo act V1 V2 ... [--repeat N]              one step with the whole flat action vector, in `robo info` order
  robo skill NAME [ARG ...] [key=value ...]    run a skill `robo info` lists
  robo done ["message"]                        end the episode and ask for it to be judged
  robo give-up ["message"]                     end the episode without claiming success
  robo move-to X Y Z [--grip G] [--max-steps N] [--tol M]
                                               the arm's move_to skill (older spelling)
  robo grip G [--steps N]                      the gripper's set skill, +1 closes, -1 opens (older spelling)

Add --json to any command to print the server's raw answer. Exit status: 0 answered, 1 the server refused or could
not be reached, 2 bad arguments.

Environment: ROBO_ROLE (sent with every request), ROBO_ORACLE_TOKEN / ROBOUSE_ORACLE_TOKEN (reference solutions
only), ROBO_TIMEOUT_S (seconds to wait for any answer; unset, 3600 for a request that steps the simulator and 120
for the others), ROBOUSE_TEXT_ONLY (a model that cannot read images: --image and --camera are ignored).

Examples:
  robo act arm.ee_delta=0.2,0,-0.1 gripper=1 --repeat 5
  robo act left.ee_delta=0,0.3,0 right.gripper=-1
  robo skill arm.move_to 0.1 0.6 0.2 grip=1
"""

from __future__ import annotations

import json
import os
import socket
import sys

PROTOCOL = 2
STEPPING_OPS = frozenset({"act", "move_to", "grip", "skill", "done", "give_up"})
"""Requests that run simulator steps: a long skill steps hundreds of times, so they may take as long as an episode."""
STEPPING_TIMEOUT_S = 3600.0
TIMEOUT_S = 120.0
MAX_ANSWER_BYTES = 64 << 20


class Usage(ValueError):
    """Bad command-line arguments (exit 2). Not a BenchError: this script runs in agent images, without BenchFlow."""


def socket_path() -> str | None:
    """Where the episode server listens: $ROBO_SOCKET, $ROBOUSE_SOCKET, or the path in ./.robouse/socket."""
    for name in ("ROBO_SOCKET", "ROBOUSE_SOCKET"):
        if os.environ.get(name):
            return os.environ[name]
    pointer = os.path.join(os.getcwd(), ".robouse", "socket")
    try:
        with open(pointer, encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def timeout_for(op: str) -> float:
    text = os.environ.get("ROBO_TIMEOUT_S", "")
    try:
        return float(text)
    except ValueError:
        return STEPPING_TIMEOUT_S if op in STEPPING_OPS else TIMEOUT_S


def send(request: dict) -> dict:
    """One request, one answer (``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ...}``)."""
    path = socket_path()
    if not path:
        return {"ok": False, "error": "no episode: ROBO_SOCKET is not set"}
    token = os.environ.get("ROBO_ORACLE_TOKEN") or os.environ.get("ROBOUSE_ORACLE_TOKEN")
    if token:
        request = {**request, "token": token}
    role = os.environ.get("ROBO_ROLE")
    if role and "role" not in request:
        request = {**request, "role": role}
    wait = timeout_for(str(request.get("op")))
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(wait)
    try:
        conn.connect(path)
        conn.sendall((json.dumps(request) + "\n").encode())
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < MAX_ANSWER_BYTES:
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
    except (FileNotFoundError, ConnectionRefusedError):
        return {"ok": False, "error": "the episode server is not running (the episode may have finished)"}
    except socket.timeout:
        return {"ok": False, "error": f"no answer from the episode server within {wait:g} s"}
    except OSError as exc:
        return {"ok": False, "error": f"the episode server cannot be reached: {exc.strerror or exc}"}
    finally:
        conn.close()
    try:
        reply = json.loads(answer.decode() or "null")
    except ValueError:
        reply = None
    return reply if isinstance(reply, dict) else {"ok": False, "error": "the episode server sent no valid answer"}


def _number(value: object) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _embodiment_lines(spec: dict) -> list[str]:
    lines = [f"embodiment: {spec.get('name')} ({spec.get('kind')})"
             + (f", one step = {spec['step_s']} s" if spec.get("step_s") else "")]
    if spec.get("doc"):
        lines.append(f"  {spec['doc']}")
    groups = spec.get("action_groups") or []
    if groups:
        lines.append("action groups (robo act GROUP=V1,V2,...; the flat vector is these in order):")
    for group in groups:
        comps = group.get("components") or []
        low = ", ".join(_number(x) for x in group.get("low") or [])
        high = ", ".join(_number(x) for x in group.get("high") or [])
        line = f"  {group.get('name')}[{len(comps)}] {','.join(comps)}  [{low}] .. [{high}]  mode={group.get('mode')}"
        if group.get("units"):
            line += f"  units: {group['units']}"
        lines.append(line + f"  hold={group.get('hold', 'zero')}")
        if group.get("doc"):
            lines.append(f"      {group['doc']}")
    skills = spec.get("skills") or []
    if skills:
        lines.append("skills (robo skill NAME ARGS):")
    for skill in skills:
        args = " ".join((f"[{a.get('name')}]" if a.get("optional") else str(a.get("name")))
                        + (f":{a['type']}" if a.get("type") else "") for a in skill.get("args") or [])
        aliases = f"  (alias: {', '.join(skill['aliases'])})" if skill.get("aliases") else ""
        lines.append(f"  {skill.get('name')} {args}{aliases}".rstrip())
        if skill.get("doc"):
            lines.append(f"      {skill['doc']}")
    sensors = spec.get("sensors") or {}
    if sensors.get("cameras"):
        lines.append("cameras: " + ", ".join(f"{c.get('name')} ({c.get('mount', 'world')})" for c in sensors["cameras"]))
    if sensors.get("proprioception"):
        lines.append("proprioception: " + ", ".join(str(f.get("name")) for f in sensors["proprioception"]))
    if spec.get("budgets"):
        lines.append("budgets: " + ", ".join(f"{k}={v}" for k, v in spec["budgets"].items()))
    return lines


def show(reply: dict, as_json: bool) -> int:
    """Print the answer; the exit status is 0 when the server answered ok, else 1."""
    if as_json:
        print(json.dumps(reply))
        return 0 if reply.get("ok") else 1
    if not reply.get("ok"):
        print(f"error: {reply.get('error')}")
        return 1
    result = reply.get("result")
    if not isinstance(result, dict):
        print(result)
        return 0
    for key, value in result.items():
        if key == "state" and isinstance(value, dict):
            print("state:")
            for name, item in value.items():
                if name != "obs_vector":
                    print(f"  {name}: {item}")
        elif key == "embodiment" and isinstance(value, dict):
            print("\n".join(_embodiment_lines(value)))
        elif key == "cameras" and isinstance(value, list):
            print("camera calibration:")
            for camera in value:
                print(f"  {json.dumps(camera)}")
        else:
            print(f"{key}: {value}")
    return 0


def _take(args: list[str], flag: str, cast, default=None):
    """Remove ``flag VALUE`` from ``args`` and return the value cast, or ``default`` when absent."""
    if flag not in args:
        return default
    at = args.index(flag)
    if at + 1 >= len(args):
        raise Usage(f"{flag} needs a value")
    value = args[at + 1]
    del args[at:at + 2]
    try:
        return cast(value)
    except ValueError:
        raise Usage(f"{flag} {value!r}: not a {cast.__name__}") from None


def _floats(values: list[str], what: str) -> list[float]:
    try:
        return [float(v) for v in values]
    except ValueError:
        raise Usage(f"{what}: {' '.join(values)!r} are not all numbers") from None


def _groups(tokens: list[str]) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    for token in tokens:
        name, _, values = token.partition("=")
        if not name or not values:
            raise Usage(f"expected GROUP=V1,V2,..., got {token!r}")
        if name in groups:
            raise Usage(f"group {name!r} given twice")
        groups[name] = _floats([v for v in values.replace(" ", "").split(",") if v], name)
    return groups


def request_for(command: str, args: list[str]) -> dict:
    """The request a command line makes. Raises Usage."""
    if command in ("info", "status"):
        return {"op": command}
    if command == "observe":
        camera = _take(args, "--camera", str)
        image = "--image" in args or camera is not None
        if image and os.environ.get("ROBOUSE_TEXT_ONLY"):
            print("note: this harness's model cannot read images, so --image and --camera are ignored",
                  file=sys.stderr)
            image, camera = False, None
        return {"op": "observe", "image": image, "camera": camera}
    if command == "act":
        repeat = _take(args, "--repeat", int, 1)
        if args and all("=" in a for a in args):
            return {"op": "act", "groups": _groups(args), "repeat": repeat}
        if any("=" in a for a in args):
            raise Usage("give either GROUP=VALUES arguments or the flat list of numbers, not both")
        return {"op": "act", "action": _floats(args, "act"), "repeat": repeat}
    if command in ("move-to", "move_to"):
        grip = _take(args, "--grip", float)
        max_steps = _take(args, "--max-steps", int, 100)
        tol = _take(args, "--tol", float, 0.01)
        if len(args) != 3:
            raise Usage("move-to needs X Y Z")
        return {"op": "move_to", "pos": _floats(args, "move-to"), "grip": grip, "max_steps": max_steps, "tol": tol}
    if command == "grip":
        steps = _take(args, "--steps", int, 15)
        if len(args) != 1:
            raise Usage("grip needs one value (+1 closes, -1 opens)")
        return {"op": "grip", "value": _floats(args, "grip")[0], "steps": steps}
    if command == "skill":
        if not args:
            raise Usage("skill needs a name")
        return {"op": "skill", "name": args[0], "args": args[1:]}
    if command == "done":
        return {"op": "done", "text": " ".join(args)}
    if command in ("give-up", "give_up"):
        return {"op": "give_up", "text": " ".join(args)}
    raise Usage(f"unknown command {command!r}")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    args = [a for a in args if a != "--json"]
    if not args or args[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    try:
        request = request_for(args[0], args[1:])
    except Usage as exc:
        print(f"error: {exc}; run `robo help`")
        return 2
    return show(send(request), as_json)


if __name__ == "__main__":
    sys.exit(main())
