#!/usr/bin/env python3
"""TEST DOUBLE: behaves like ``codex exec --json`` (the Codex CLI's headless JSONL mode).

Stdlib only (it runs inside a sandbox image with bare python3). It takes the
prompt from stdin (``-`` or no prompt argument) or a positional argument and
prints the CLI's JSONL events: ``thread.started`` (``thread_id``),
``turn.started``, ``item.started`` / ``item.completed`` for ``agent_message``,
``reasoning``, ``command_execution`` and ``file_change`` items, then
``turn.completed`` with ``usage`` (the thread's running totals, as the real
CLI reports them) or ``error`` + ``turn.failed``. ``--cd DIR`` is its working folder; ``--sandbox`` and
``--skip-git-repo-check`` are accepted; ``FAKE_CODEX_ARGV_FILE`` names a file to record the argv in. Threads live
under ``$HOME/.fake-codex``; ``exec resume THREAD_ID`` continues one (the
prompt number picks the script's step list).

Script: ``FAKE_CLI_SCRIPT``, the same steps as ``fake_claude_cli.py``, except
that ``ask_model`` calls the OpenAI Responses API through ``OPENAI_BASE_URL``
and ``tool_start`` leaves a command running.
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

USAGE = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
ITEMS = {"n": 0}


def out(line: dict) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def item(phase: str, body: dict, item_id: str | None = None) -> str:
    if item_id is None:
        item_id = f"item_{ITEMS['n']}"
        ITEMS["n"] += 1
    out({"type": f"item.{phase}", "item": {"id": item_id, **body}})
    return item_id


def parse_args(argv: list[str]) -> dict:
    opts = {"exec": False, "json": False, "resume": None, "model": None, "config": {}, "prompt": None, "cd": None,
            "sandbox": None}
    rest = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-m", "--model", "-c", "--config", "-C", "--cd", "-s", "--sandbox"):
            if arg in ("-c", "--config"):
                key, _, value = argv[i + 1].partition("=")
                opts["config"][key] = value
            elif arg in ("-C", "--cd"):
                opts["cd"] = argv[i + 1]
            elif arg in ("-s", "--sandbox"):
                opts["sandbox"] = argv[i + 1]
            else:
                opts["model"] = argv[i + 1]
            i += 1
        elif arg == "--json":
            opts["json"] = True
        elif arg == "-" or not arg.startswith("-"):
            rest.append(arg)
        i += 1
    if rest[:1] == ["exec"]:
        opts["exec"] = True
        rest = rest[1:]
    if rest[:1] == ["resume"]:
        opts["resume"] = rest[1] if len(rest) > 1 else None
        rest = rest[2:]
    opts["prompt"] = rest[0] if rest and rest[0] != "-" else None
    return opts


def ask_model(model: str, prompt: str) -> tuple[int, str]:
    """OpenAI Responses through the gateway: (status, text or error body)."""
    url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/responses"
    body = {"model": model, "input": prompt}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "content-type": "application/json", "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            data = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, f"unexpected status {exc.code}: {exc.read().decode(errors='replace')}"
    usage = data.get("usage") or {}
    USAGE["input_tokens"] += usage.get("input_tokens", 0)
    USAGE["output_tokens"] += usage.get("output_tokens", 0)
    USAGE["cached_input_tokens"] += (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
    texts = [c.get("text", "") for o in data.get("output", []) for c in o.get("content", []) or []]
    return 200, "".join(texts)


def run_tool(step: dict) -> None:
    if "write" in step:
        spec = step["write"]
        with open(spec["path"], "w", encoding="utf-8") as handle:
            handle.write(spec["content"])
        item("completed", {"type": "file_change", "changes": [{"path": spec["path"], "kind": "add"}],
                           "status": "completed"})
        return
    command = f"bash -lc {json.dumps(step['run'])}"
    tid = item("started", {"type": "command_execution", "command": command, "aggregated_output": "",
                           "exit_code": None, "status": "in_progress"})
    done = subprocess.run(step["run"], check=False, shell=True, capture_output=True, text=True)
    item("completed", {"type": "command_execution", "command": command, "aggregated_output": done.stdout + done.stderr,
                       "exit_code": done.returncode, "status": "completed" if done.returncode == 0 else "failed"}, tid)


def fail(message: str) -> int:
    out({"type": "error", "message": message})
    out({"type": "turn.failed", "error": {"message": message}})
    return 1


def main() -> int:
    opts = parse_args(sys.argv[1:])
    if not opts["exec"] or not opts["json"]:
        sys.stderr.write("error: this double only speaks `codex exec --json`\n")
        return 2
    prompt = opts["prompt"] if opts["prompt"] is not None else sys.stdin.read()
    if opts["cd"]:
        os.chdir(opts["cd"])
    if os.environ.get("FAKE_CODEX_ARGV_FILE"):  # what it was started with, for tests of the launch
        with open(os.environ["FAKE_CODEX_ARGV_FILE"], "w") as handle:
            json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "options": opts}, handle)
    home = os.path.join(os.environ.get("HOME", "/tmp"), ".fake-codex")
    os.makedirs(home, exist_ok=True)
    tid = opts["resume"] or str(uuid.uuid4())
    state_file = os.path.join(home, tid + ".json")
    if opts["resume"] and not os.path.exists(state_file):
        sys.stderr.write(f"Error: thread {tid} not found\n")
        return 1
    state = {"prompts": []}
    if opts["resume"]:
        with open(state_file) as handle:
            state = json.load(handle)
    state["prompts"].append(prompt)
    with open(state_file, "w") as handle:
        json.dump(state, handle)
    model = opts["model"] or "gpt-fake"
    out({"type": "thread.started", "thread_id": tid})
    out({"type": "turn.started"})
    plan = json.loads(os.environ.get("FAKE_CLI_SCRIPT") or "{}").get("prompts") or [[]]
    for step in plan[min(len(state["prompts"]), len(plan)) - 1]:
        op = step["op"]
        if op in ("message", "echo_prompt"):
            text = step["text"] if op == "message" else f"prompt {len(state['prompts'])}: {prompt}"
            item("completed", {"type": "agent_message", "text": text})
        elif op == "thought":
            item("completed", {"type": "reasoning", "text": step["text"]})
        elif op == "tool":
            run_tool(step)
        elif op == "tool_start":
            item("started", {"type": "command_execution", "command": "sleep infinity", "aggregated_output": "",
                             "exit_code": None, "status": "in_progress"})
            time.sleep(3600)
        elif op == "ask_model":
            status, text = ask_model(model, step.get("prompt", "hi"))
            if status != 200:
                return fail(text)
            item("completed", {"type": "agent_message", "text": text})
        elif op == "error":
            return fail(step["text"])
        elif op == "sleep":
            time.sleep(float(step["sec"]))
        elif op == "exit":
            os._exit(int(step.get("code", 1)))
        elif op == "stderr":
            sys.stderr.write(step["text"] + "\n")
            sys.stderr.flush()
    USAGE["input_tokens"] += 100
    USAGE["output_tokens"] += 20
    totals = {k: state.get("usage", {}).get(k, 0) + v for k, v in USAGE.items()}  # the thread's running totals
    state["usage"] = totals
    with open(state_file, "w") as handle:
        json.dump(state, handle)
    out({"type": "turn.completed", "usage": totals})
    return 0


if __name__ == "__main__":
    sys.exit(main())
