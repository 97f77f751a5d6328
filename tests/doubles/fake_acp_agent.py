#!/usr/bin/env python3
"""TEST DOUBLE: a scripted ACP agent speaking JSON-RPC 2.0 over stdio (newline-delimited).

Runs inside a sandbox whose image has only the Python stdlib (the ACP SDK and
httpx are not there), so the protocol is written by hand here; that also keeps
the wire format honest against the SDK-based client. The script comes from the
environment variable ``FAKE_ACP_SCRIPT`` (JSON)::

    {"prompts": [[step, ...], ...],      # steps for prompt 1, 2, ... (the last list repeats)
     "config_options": [...],            # advertised in session/new (optional)
     "load_session": true,               # advertise loadSession; sessions kept in ~/.fake-acp (optional)
     "on": {"initialize": "exit"}}       # die instead of answering a method (optional)

Steps (``op``): ``message``/``thought`` (one chunk, ``text``); ``tool`` (a call reported
pending → in_progress → completed; ``write`` = {path, content} writes a file in the cwd,
``run`` = shell command); ``tool_start``/``tool_end`` (a call left in flight); ``ask_model``
(``api`` openai|anthropic through OPENAI_BASE_URL / ANTHROPIC_BASE_URL, answer streamed as
a message; an HTTP error fails the prompt); ``sleep`` (``sec``, silent, ends early with
stopReason cancelled on session/cancel); ``hang`` (silent forever, ignores cancel);
``exit`` (``code``, abrupt); ``error`` (the prompt answers a JSON-RPC error); ``permission``
(asks session/request_permission); ``fs_read`` (asks fs/read_text_file); ``stderr`` (``text``);
``report_config`` (a message naming the model/effort set so far); ``report_mcp`` (the mcpServers of
session/new); ``mcp_stdio`` (runs each stdio MCP server with one ``initialize`` line, reports its reply);
``report_history`` (a message ``history:<json>`` of every prompt the session has had, loaded ones included);
``save_history`` (the same list written to ``path``, default ``history.json``, in the cwd).
``ask_model`` without ``prompt`` sends the prompt being answered; ``messages`` (a whole OpenAI
conversation, tool results included), ``tools`` and ``model`` override the request's.

With ``load_session`` each session's prompts are kept on disk (``~/.fake-acp/<id>.json``, as an agent
that keeps its conversation on disk would); ``session/load`` replays them as ``user_message_chunk``
updates and continues that session. Without it, ``session/load`` is refused (-32601).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

SCRIPT = json.loads(os.environ.get("FAKE_ACP_SCRIPT") or "{}")
INBOX: "queue.Queue[dict]" = queue.Queue()
REPLIES: "queue.Queue[dict]" = queue.Queue()
STATE = {"cwd": os.getcwd(), "config": {}, "next_id": 1000, "prompt_no": 0, "history": [], "prompt": "hi"}
SESSIONS = os.path.expanduser("~/.fake-acp")


def log(text: str) -> None:
    sys.stderr.write(f"fake-agent: {text}\n")
    sys.stderr.flush()


def send(message: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict) -> None:
    send({"method": "session/update", "params": {"sessionId": session_id, "update": body}})


def request(method: str, params: dict) -> dict:
    STATE["next_id"] += 1
    send({"id": STATE["next_id"], "method": method, "params": params})
    return REPLIES.get(timeout=30)


def reader() -> None:
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        message = json.loads(line)
        (REPLIES if "method" not in message else INBOX).put(message)
    INBOX.put({"method": "__eof__"})


def chunk(session_id: str, kind: str, text: str) -> None:
    update(session_id, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})


def ask_model(step: dict) -> str:
    api = step.get("api", "openai")
    if api == "anthropic":
        url = os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages"
        headers = {"x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""), "anthropic-version": "2023-06-01"}
        body = {"model": os.environ.get("ANTHROPIC_MODEL", "claude-test"), "max_tokens": 64,
                "messages": [{"role": "user", "content": step.get("prompt", STATE["prompt"])}]}
    else:
        url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
        headers = {"authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "")}
        body = {"model": step.get("model") or os.environ.get("OPENAI_MODEL", "gpt-test"),
                "messages": step.get("messages") or [{"role": "user", "content": step.get("prompt", STATE["prompt"])}]}
        if step.get("tools"):
            body["tools"] = step["tools"]
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **headers})
    with urllib.request.urlopen(req, timeout=30) as resp:
        data = json.loads(resp.read())
    if api == "anthropic":
        return "".join(block.get("text", "") for block in data.get("content", []))
    message = data["choices"][0]["message"]
    return message["content"] if message.get("content") is not None else json.dumps(message.get("tool_calls"))


def wait_cancel(seconds: float | None) -> bool:
    """Sleep, returning True early when session/cancel arrives (other messages are answered)."""
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        try:
            message = INBOX.get(timeout=left)
        except queue.Empty:
            return False
        if message.get("method") == "session/cancel":
            log("got session/cancel")
            return True
        if message.get("method") == "__eof__":
            os._exit(0)


def run_tool(session_id: str, step: dict, finish: bool = True) -> None:
    tid = step.get("id", "tc_1")
    update(session_id, {"sessionUpdate": "tool_call", "toolCallId": tid, "title": step.get("title", tid),
                        "kind": step.get("kind", "execute"), "status": "pending"})
    if not finish:
        return
    update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "in_progress"})
    output = ""
    if "write" in step:
        path = os.path.join(STATE["cwd"], step["write"]["path"])
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(step["write"]["content"])
        output = f"wrote {step['write']['path']}"
    if "run" in step:
        output = subprocess.run(step["run"], shell=True, cwd=STATE["cwd"], capture_output=True, text=True).stdout
    update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": tid, "status": "completed",
                        "content": [{"type": "content", "content": {"type": "text", "text": output}}]})


def do_step(session_id: str, step: dict):
    """Run one step; returns a stop reason or an error dict to end the prompt early."""
    op = step["op"]
    if op in ("message", "thought"):
        chunk(session_id, "agent_message_chunk" if op == "message" else "agent_thought_chunk", step["text"])
    elif op == "tool":
        run_tool(session_id, step)
    elif op == "tool_start":
        run_tool(session_id, step, finish=False)
    elif op == "tool_end":
        update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": step.get("id", "tc_1"),
                            "status": "completed"})
    elif op == "ask_model":
        try:
            chunk(session_id, "agent_message_chunk", ask_model(step))
        except urllib.error.HTTPError as exc:
            return {"code": -32603, "message": "Internal error",
                    "data": {"details": f"HTTP {exc.code}: {exc.read()[:200].decode('utf-8', 'replace')}"}}
    elif op == "sleep":
        if wait_cancel(float(step["sec"])):
            return "cancelled"
    elif op == "hang":
        while True:
            time.sleep(3600)
    elif op == "exit":
        log(f"exiting abruptly with {step.get('code', 1)}")
        os._exit(int(step.get("code", 1)))
    elif op == "error":
        return {"code": step.get("code", -32603), "message": step.get("message", "Internal error"),
                "data": step.get("data")}
    elif op == "permission":
        reply = request("session/request_permission", {
            "sessionId": session_id,
            "toolCall": {"toolCallId": "perm_1", "title": "needs permission"},
            "options": [{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                        {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
                        {"optionId": "always", "name": "Always", "kind": "allow_always"}]})
        chunk(session_id, "agent_message_chunk", f"permission:{reply['result']['outcome'].get('optionId')}")
    elif op == "fs_read":
        reply = request("fs/read_text_file", {"sessionId": session_id, "path": step.get("path", "/etc/hostname")})
        chunk(session_id, "agent_message_chunk", f"fs_read_error:{reply.get('error', {}).get('code')}")
    elif op == "stderr":
        log(step["text"])
    elif op == "report_config":
        chunk(session_id, "agent_message_chunk", "config:" + json.dumps(STATE["config"], sort_keys=True))
    elif op == "report_history":
        chunk(session_id, "agent_message_chunk", "history:" + json.dumps(STATE["history"]))
    elif op == "save_history":
        with open(os.path.join(STATE["cwd"], step.get("path", "history.json")), "w", encoding="utf-8") as handle:
            json.dump(STATE["history"], handle)
    elif op == "report_mcp":
        chunk(session_id, "agent_message_chunk", "mcp:" + json.dumps(STATE.get("mcp_servers"), sort_keys=True))
    elif op == "mcp_stdio":  # start each stdio MCP server of session/new, as a real agent would, and greet it
        for server in STATE.get("mcp_servers") or []:
            if "command" not in server:
                continue
            env = {**os.environ, **{e["name"]: e["value"] for e in server.get("env") or []}}
            proc = subprocess.run([server["command"], *server.get("args", [])], env=env, capture_output=True,
                                  text=True, timeout=30, input=json.dumps(
                                      {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}) + "\n")
            chunk(session_id, "agent_message_chunk", f"mcp_stdio:{server['name']}:{proc.stdout.strip()}")
            with open(os.path.join(STATE["cwd"], f"mcp-{server['name']}.txt"), "w") as out:
                out.write(proc.stdout)
    return None


def handle_prompt(message: dict) -> None:
    session_id = message["params"]["sessionId"]
    STATE["prompt"] = "".join(b.get("text", "") for b in message["params"].get("prompt") or [])
    STATE["history"].append(STATE["prompt"])
    save_session(session_id)
    plans = SCRIPT.get("prompts") or [[{"op": "message", "text": "done"}]]
    steps = plans[min(STATE["prompt_no"], len(plans) - 1)]
    STATE["prompt_no"] += 1
    for step in steps:
        result = do_step(session_id, step)
        if isinstance(result, dict):
            send({"id": message["id"], "error": result})
            return
        if result == "cancelled":
            send({"id": message["id"], "result": {"stopReason": "cancelled"}})
            return
    send({"id": message["id"], "result": {"stopReason": "end_turn"}})


def save_session(session_id: str) -> None:
    if SCRIPT.get("load_session"):
        os.makedirs(SESSIONS, exist_ok=True)
        with open(os.path.join(SESSIONS, session_id + ".json"), "w", encoding="utf-8") as handle:
            json.dump({"cwd": STATE["cwd"], "history": STATE["history"]}, handle)


def load_session(message: dict) -> None:
    params = message["params"]
    path = os.path.join(SESSIONS, os.path.basename(params["sessionId"]) + ".json")
    if not SCRIPT.get("load_session"):
        send({"id": message["id"], "error": {"code": -32601, "message": "Method not found"}})
        return
    if not os.path.isfile(path):
        send({"id": message["id"], "error": {"code": -32002, "message": f"no session {params['sessionId']}"}})
        return
    with open(path, encoding="utf-8") as handle:
        kept = json.load(handle)
    STATE["cwd"] = params.get("cwd") or kept["cwd"]
    STATE["history"] = kept["history"]
    for text in STATE["history"]:  # the protocol's replay of the conversation
        update(params["sessionId"], {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}})
    send({"id": message["id"], "result": {}})


def main() -> None:
    threading.Thread(target=reader, daemon=True).start()
    log(f"started as uid {os.getuid()} in {STATE['cwd']}")
    while True:
        message = INBOX.get()
        method = message.get("method")
        log(f"got {method}")
        if method == "__eof__":
            return
        if SCRIPT.get("on", {}).get(method) == "exit":
            log(f"dying on {method}")
            os._exit(3)
        params = message.get("params") or {}
        if method == "initialize":
            STATE["client"] = params.get("clientCapabilities")
            send({"id": message["id"], "result": {
                "protocolVersion": 1, "agentInfo": {"name": "fake-acp-agent", "version": "1.0.0"},
                "agentCapabilities": {"loadSession": bool(SCRIPT.get("load_session"))}, "authMethods": []}})
        elif method == "session/new":
            STATE["cwd"] = params.get("cwd") or STATE["cwd"]
            STATE["mcp_servers"] = params.get("mcpServers") or []
            result = {"sessionId": f"fake-session-{os.getpid()}-{time.time_ns()}"
                      if SCRIPT.get("load_session") else "fake-session-1"}
            if SCRIPT.get("config_options"):
                result["configOptions"] = SCRIPT["config_options"]
            send({"id": message["id"], "result": result})
        elif method == "session/set_config_option":
            STATE["config"][params["configId"]] = params["value"]
            send({"id": message["id"], "result": {"configOptions": SCRIPT.get("config_options", [])}})
        elif method == "session/set_model":
            STATE["config"]["set_model"] = params["modelId"]
            send({"id": message["id"], "result": {}})
        elif method == "session/load":
            load_session(message)
        elif method == "session/prompt":
            handle_prompt(message)
        elif method == "session/cancel":
            continue
        elif "id" in message:
            send({"id": message["id"], "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
