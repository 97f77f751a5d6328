#!/usr/bin/env python3
"""TEST DOUBLE: behaves like ``claude -p --output-format stream-json --verbose`` (Claude Code headless).

Stdlib only (it runs inside a sandbox image with bare python3). It takes the
prompt from stdin (or a positional argument), prints the CLI's stream-json
lines (``system`` init, ``assistant`` messages with ``text`` / ``thinking`` /
``tool_use`` blocks, ``user`` messages with ``tool_result`` blocks, a final
``result`` with this run's ``usage`` and the session's running ``total_cost_usd``, as
the real CLI reports them), and keeps its sessions under
``$HOME/.fake-claude`` so ``--resume ID`` continues one (the prompt number
picks the script's step list, as in ``tests/doubles/fake_acp_agent.py``).

Script: ``FAKE_CLI_SCRIPT`` = ``{"prompts": [[step, ...], ...]}`` (the last list
repeats). Steps (``op``): ``message`` / ``thought`` (``text``); ``echo_prompt``;
``tool`` (``write`` = {path, content} or ``run`` = shell command, in the cwd);
``tool_start`` (a tool call left running, then silence forever); ``ask_model``
(Anthropic Messages through ``ANTHROPIC_BASE_URL``; an HTTP error ends the
prompt with an error result, exit 1); ``error`` (an error ``result``, exit 1);
``sleep`` (``sec``); ``exit`` (``code``, abrupt, no result); ``stderr`` (``text``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

USAGE = {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0}


def out(line: dict) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def parse_args(argv: list[str]) -> dict:
    opts = {"print": False, "format": None, "verbose": False, "resume": None, "model": None, "effort": None,
            "prompt": None}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-p", "--print"):
            opts["print"] = True
        elif arg == "--verbose":
            opts["verbose"] = True
        elif arg in ("--output-format", "--resume", "-r", "--model", "--effort"):
            key = {"--output-format": "format", "-r": "resume"}.get(arg, arg.lstrip("-"))
            opts[key] = argv[i + 1]
            i += 1
        elif not arg.startswith("-"):
            opts["prompt"] = arg
        i += 1
    return opts


def assistant(sid: str, model: str, *blocks: dict) -> None:
    out({"type": "assistant", "message": {"id": "msg_" + uuid.uuid4().hex[:12], "type": "message",
                                          "role": "assistant", "model": model, "content": list(blocks)},
         "parent_tool_use_id": None, "session_id": sid})


def result(sid: str, started: float, turns: int, text: str, cost: float, error: bool = False) -> None:
    out({"type": "result", "subtype": "success", "is_error": error, "duration_ms": int((time.time() - started) * 1000),
         "duration_api_ms": 1, "num_turns": turns, "result": text, "session_id": sid,
         "total_cost_usd": cost, "usage": USAGE, "permission_denials": []})


def ask_model(model: str, prompt: str) -> tuple[int, str]:
    """Anthropic Messages through the gateway: (status, text or error body)."""
    url = os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages"
    token = os.environ.get("ANTHROPIC_AUTH_TOKEN")
    headers = {"authorization": f"Bearer {token}"} if token else {"x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")}
    body = {"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": prompt}]}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", "anthropic-version": "2023-06-01",
                                          **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            data = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    for key, value in (data.get("usage") or {}).items():
        if key in USAGE and isinstance(value, int):
            USAGE[key] += value
    return 200, "".join(b.get("text", "") for b in data.get("content", []))


def run_tool(sid: str, model: str, step: dict) -> None:
    tid = "toolu_" + uuid.uuid4().hex[:16]
    if "write" in step:
        spec = step["write"]
        assistant(sid, model, {"type": "tool_use", "id": tid, "name": "Write",
                               "input": {"file_path": spec["path"], "content": spec["content"]}})
        with open(spec["path"], "w", encoding="utf-8") as handle:
            handle.write(spec["content"])
        text, failed = f"File created successfully at: {spec['path']}", False
    else:
        assistant(sid, model, {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": step["run"]}})
        done = subprocess.run(step["run"], check=False, shell=True, capture_output=True, text=True)
        text, failed = done.stdout + done.stderr, done.returncode != 0
    out({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": failed}]},
         "parent_tool_use_id": None, "session_id": sid})


def main() -> int:
    opts = parse_args(sys.argv[1:])
    if not opts["print"] or opts["format"] != "stream-json" or not opts["verbose"]:
        sys.stderr.write("Error: this double only speaks -p --output-format stream-json --verbose\n")
        return 2
    prompt = opts["prompt"] if opts["prompt"] is not None else sys.stdin.read()
    home = os.path.join(os.environ.get("HOME", "/tmp"), ".fake-claude")
    os.makedirs(home, exist_ok=True)
    sid = opts["resume"] or str(uuid.uuid4())
    state_file = os.path.join(home, sid + ".json")
    if opts["resume"] and not os.path.exists(state_file):
        sys.stderr.write(f"No conversation found with session ID: {sid}\n")
        return 1
    state = {"prompts": [], "cost": 0.0}
    if opts["resume"]:
        with open(state_file) as handle:
            state = json.load(handle)
    state["prompts"].append(prompt)
    with open(state_file, "w") as handle:
        json.dump(state, handle)
    model = opts["model"] or os.environ.get("ANTHROPIC_MODEL") or "claude-fake"
    started, last = time.time(), ""
    out({"type": "system", "subtype": "init", "session_id": sid, "cwd": os.getcwd(), "model": model,
         "tools": ["Bash", "Write"], "permissionMode": "bypassPermissions", "effort": opts["effort"]})
    plan = json.loads(os.environ.get("FAKE_CLI_SCRIPT") or "{}").get("prompts") or [[]]
    steps = plan[min(len(state["prompts"]), len(plan)) - 1]
    for step in steps:
        op = step["op"]
        if op in ("message", "echo_prompt"):
            last = step["text"] if op == "message" else f"prompt {len(state['prompts'])}: {prompt}"
            assistant(sid, model, {"type": "text", "text": last})
        elif op == "thought":
            assistant(sid, model, {"type": "thinking", "thinking": step["text"], "signature": "sig"})
        elif op == "tool":
            run_tool(sid, model, step)
        elif op == "tool_start":
            assistant(sid, model, {"type": "tool_use", "id": "toolu_inflight", "name": "Bash",
                                   "input": {"command": "sleep infinity"}})
            time.sleep(3600)
        elif op == "ask_model":
            status, text = ask_model(model, step.get("prompt", "hi"))
            if status != 200:
                result(sid, started, 1, f"API Error: {status} {text}", state["cost"], error=True)
                return 1
            last = text
            assistant(sid, model, {"type": "text", "text": text})
        elif op == "error":
            result(sid, started, 1, step["text"], state["cost"], error=True)
            return 1
        elif op == "sleep":
            time.sleep(float(step["sec"]))
        elif op == "exit":
            os._exit(int(step.get("code", 1)))
        elif op == "stderr":
            sys.stderr.write(step["text"] + "\n")
            sys.stderr.flush()
    USAGE["input_tokens"] += 100
    USAGE["output_tokens"] += 20
    state["cost"] += 0.0015
    with open(state_file, "w") as handle:
        json.dump(state, handle)
    result(sid, started, len(steps), last, state["cost"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
