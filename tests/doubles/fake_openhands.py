#!/usr/bin/env python3
"""TEST DOUBLE: an OpenHands stand-in, an ACP agent (JSON-RPC 2.0 over stdio) running OpenHands' loop.

OpenHands itself cannot be installed here (its CLI needs Python 3.12 from GitHub), so this double
does what ``openhands acp`` does that ``bench eval continue`` relies on, written from OpenHands'
published formats (software-agent-sdk v1.28.1, the SDK BenchFlow 0.10 pins):

* the loop: per prompt, call the model over OpenAI Chat Completions at ``LLM_BASE_URL`` with
  ``LLM_API_KEY`` and ``LLM_MODEL`` (as LiteLLM does for an OpenAI-compatible endpoint), with the
  SDK's default tools (``terminal``, ``file_editor``, ``think``, ``finish``); run each tool call,
  send the observation back as a ``tool`` message, and stop when the model calls ``finish`` or
  answers without a tool call;
* the conversation as OpenHands persists it, and rebuilds its messages from: under
  ``~/.openhands/conversations/<conversation id hex>/``, ``base_state.json`` and
  ``events/event-<index:05d>-<event id>.json`` (``SystemPromptEvent``, ``MessageEvent``,
  ``ActionEvent``, ``ObservationEvent``, each with its ``kind``); every request is built from
  those files, as the SDK's ``events_to_messages`` does, so what was persisted is what is sent.

``FAKE_OPENHANDS_STREAM=1`` makes it ask for streamed completions (SSE, reassembled here).
Only the Python standard library is used: the sandbox image has nothing else.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from datetime import datetime

SYSTEM_PROMPT = ("You are OpenHands agent, a helpful AI assistant that can interact with a computer to solve "
                 "tasks.")
TOOLS = [
    {"type": "function", "function": {"name": "terminal", "description": "Execute a bash command in the terminal.",
     "parameters": {"type": "object", "properties": {
         "command": {"type": "string", "description": "The bash command to execute."},
         "is_input": {"type": "boolean", "description": "Whether the command is input to a running process."},
         "timeout": {"type": "number", "description": "Timeout in seconds."},
         "reset": {"type": "boolean", "description": "Reset the terminal session."}}, "required": ["command"]}}},
    {"type": "function", "function": {"name": "file_editor", "description": "View, create and edit files.",
     "parameters": {"type": "object", "properties": {
         "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "undo_edit"]},
         "path": {"type": "string"}, "file_text": {"type": "string"}}, "required": ["command", "path"]}}},
    {"type": "function", "function": {"name": "think", "description": "Log a thought.",
     "parameters": {"type": "object", "properties": {"thought": {"type": "string"}}, "required": ["thought"]}}},
    {"type": "function", "function": {"name": "finish", "description": "Signal that the task is done.",
     "parameters": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}}},
]
INBOX: "queue.Queue[dict]" = queue.Queue()
STATE: dict = {"cwd": os.getcwd(), "dir": None, "n_events": 0}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict) -> None:
    send({"method": "session/update", "params": {"sessionId": session_id, "update": body}})


def reader() -> None:
    for line in sys.stdin:
        if line.strip():
            INBOX.put(json.loads(line))
    INBOX.put({"method": "__eof__"})


# --- OpenHands' persisted conversation --------------------------------------------------------
def open_conversation(cwd: str) -> None:
    conversation_id = uuid.uuid4()
    folder = os.path.join(os.path.expanduser("~/.openhands/conversations"), conversation_id.hex)
    os.makedirs(os.path.join(folder, "events"), exist_ok=True)
    STATE.update(dir=folder, n_events=0)
    save_state(str(conversation_id), cwd, "idle")


def save_state(conversation_id: str, cwd: str, status: str) -> None:
    state = {"id": conversation_id, "agent": {"kind": "Agent", "llm": {"model": os.environ.get("LLM_MODEL", ""),
                                                                           "base_url": os.environ.get("LLM_BASE_URL")},
                                              "tools": [{"name": t["function"]["name"]} for t in TOOLS]},
             "workspace": {"kind": "LocalWorkspace", "working_dir": cwd}, "persistence_dir": STATE["dir"],
             "max_iterations": 500, "stuck_detection": True, "execution_status": status,
             "confirmation_policy": {"kind": "NeverConfirm"}, "activated_knowledge_skills": []}
    STATE["conversation_id"] = conversation_id
    with open(os.path.join(STATE["dir"], "base_state.json"), "w", encoding="utf-8") as handle:
        json.dump(state, handle)


def persist(kind: str, source: str, **fields) -> dict:
    event = {"kind": kind, "id": str(uuid.uuid4()), "timestamp": datetime.now().isoformat(), "source": source,
             **fields}
    name = f"event-{STATE['n_events']:05d}-{event['id']}.json"
    with open(os.path.join(STATE["dir"], "events", name), "w", encoding="utf-8") as handle:
        json.dump(event, handle)
    STATE["n_events"] += 1
    return event


def load_events() -> list[dict]:
    folder = os.path.join(STATE["dir"], "events")
    return [json.load(open(os.path.join(folder, name), encoding="utf-8")) for name in sorted(os.listdir(folder))
            if name.startswith("event-") and name.endswith(".json")]


def text_of(parts: list[dict]) -> str:
    return "".join(part.get("text", "") for part in parts or [])


def events_to_messages(events: list[dict]) -> list[dict]:
    """The Chat Completions messages of the persisted events (one assistant message per LLM response)."""
    messages: list[dict] = []
    for event in events:
        kind = event["kind"]
        if kind == "SystemPromptEvent":
            messages.append({"role": "system", "content": event["system_prompt"]["text"]})
        elif kind == "MessageEvent":
            message = event["llm_message"]
            messages.append({"role": message["role"], "content": text_of(message["content"])})
        elif kind == "ActionEvent":
            call = {"id": event["tool_call_id"], "type": "function",
                    "function": {"name": event["tool_call"]["name"], "arguments": event["tool_call"]["arguments"]}}
            last = messages[-1] if messages else {}
            if last.get("role") == "assistant" and last.get("_response") == event["llm_response_id"]:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": text_of(event["thought"]) or None,
                                 "tool_calls": [call], "_response": event["llm_response_id"]})
        elif kind == "ObservationEvent":
            messages.append({"role": "tool", "tool_call_id": event["tool_call_id"], "name": event["tool_name"],
                             "content": text_of(event["observation"]["content"])})
    for message in messages:
        message.pop("_response", None)
    return messages


# --- the model ----------------------------------------------------------------------------------
def complete(messages: list[dict]) -> dict:
    stream = os.environ.get("FAKE_OPENHANDS_STREAM") == "1"
    model = os.environ.get("LLM_MODEL", "gpt-4o-mini").split("/", 1)[-1]  # LiteLLM strips its provider prefix
    body = {"model": model, "messages": messages, "tools": TOOLS, "stream": stream}
    request = urllib.request.Request(os.environ["LLM_BASE_URL"].rstrip("/") + "/chat/completions",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json",
                                              "authorization": "Bearer " + os.environ.get("LLM_API_KEY", "")})
    with urllib.request.urlopen(request, timeout=120) as response:
        if not stream:
            return json.loads(response.read())
        return reassemble(response)


def reassemble(response) -> dict:
    """A streamed completion's SSE chunks merged into the message a non-streamed call returns."""
    message: dict = {"role": "assistant", "content": None}
    calls: dict[int, dict] = {}
    head: dict = {}
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        chunk = json.loads(line[5:])
        head.setdefault("id", chunk.get("id"))
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                message["content"] = (message["content"] or "") + delta["content"]
            for call in delta.get("tool_calls") or []:
                merged = calls.setdefault(call.get("index", 0), {"id": None, "type": "function",
                                                                 "function": {"name": "", "arguments": ""}})
                merged["id"] = call.get("id") or merged["id"]
                merged["function"]["name"] += (call.get("function") or {}).get("name") or ""
                merged["function"]["arguments"] += (call.get("function") or {}).get("arguments") or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {**head, "choices": [{"index": 0, "message": message}]}


# --- tools ---------------------------------------------------------------------------------------
def action_of(name: str, arguments: dict) -> dict:
    """The SDK's action for a tool call (``TerminalAction`` …), persisted before it runs."""
    if name == "terminal":
        return {"kind": "TerminalAction", "command": arguments.get("command", ""), "is_input": False, "timeout": None,
                "reset": False}
    kinds = {"file_editor": "FileEditorAction", "finish": "FinishAction", "think": "ThinkAction"}
    return {"kind": kinds.get(name, "ThinkAction"), **arguments}


def run_tool(name: str, arguments: dict) -> tuple[dict, str]:
    """(observation, its text) of one tool call, as the SDK's ``TerminalObservation`` etc."""
    if name == "terminal":
        done = subprocess.run(["bash", "-c", arguments.get("command", "")], cwd=STATE["cwd"], capture_output=True,
                              text=True)
        text = (done.stdout + done.stderr) + f"\n[The command completed with exit code {done.returncode}.]"
        return ({"kind": "TerminalObservation", "content": [{"type": "text", "text": text}],
                 "command": arguments.get("command", ""), "exit_code": done.returncode, "is_error": False,
                 "timeout": False}, text)
    if name == "file_editor" and arguments.get("command") == "create":
        path = os.path.join(STATE["cwd"], arguments["path"])
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(arguments.get("file_text", ""))
        text = f"File created successfully at: {path}"
        return {"kind": "FileEditorObservation", "content": [{"type": "text", "text": text}], "is_error": False}, text
    if name == "finish":
        text = arguments.get("message", "")
        return {"kind": "FinishObservation", "content": [{"type": "text", "text": text}], "is_error": False}, text
    text = "Your thought has been logged." if name == "think" else f"Tool {name} is not available here."
    return ({"kind": "ThinkObservation", "content": [{"type": "text", "text": text}], "is_error": name != "think"},
            text)


def cancelled() -> bool:
    while not INBOX.empty():
        if INBOX.get().get("method") in ("session/cancel", "__eof__"):
            return True
    return False


def handle_prompt(message: dict) -> None:
    session_id = message["params"]["sessionId"]
    prompt = "".join(b.get("text", "") for b in message["params"].get("prompt") or [])
    if STATE["n_events"] == 0:
        persist("SystemPromptEvent", "agent", system_prompt={"type": "text", "text": SYSTEM_PROMPT}, tools=TOOLS)
    persist("MessageEvent", "user", llm_message={"role": "user", "content": [{"type": "text", "text": prompt}]},
            activated_skills=[], extended_content=[])
    save_state(STATE["conversation_id"], STATE["cwd"], "running")
    while not cancelled():
        try:
            response = complete(events_to_messages(load_events()))
        except urllib.error.HTTPError as exc:
            send({"id": message["id"], "error": {"code": -32603, "message": "Internal error", "data": {
                "details": f"HTTP {exc.code}: {exc.read()[:200].decode('utf-8', 'replace')}"}}})
            return
        reply = response["choices"][0]["message"]
        if not reply.get("tool_calls"):
            persist("MessageEvent", "agent", llm_message={"role": "assistant", "content": [
                {"type": "text", "text": reply.get("content") or ""}]}, activated_skills=[], extended_content=[])
            update(session_id, {"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": reply.get("content") or ""}})
            break
        finished = False
        for call in reply["tool_calls"]:
            name, arguments = call["function"]["name"], json.loads(call["function"]["arguments"] or "{}")
            update(session_id, {"sessionUpdate": "tool_call", "toolCallId": call["id"], "title": name,
                                "kind": "execute" if name == "terminal" else "other", "status": "in_progress"})
            event = persist("ActionEvent", "agent", thought=[{"type": "text", "text": reply.get("content") or ""}],
                            action=action_of(name, arguments), tool_name=name, tool_call_id=call["id"],
                            tool_call={"id": call["id"], "name": name, "arguments": call["function"]["arguments"],
                                       "origin": "completion"},
                            llm_response_id=response.get("id") or "", security_risk="UNKNOWN")
            observation, text = run_tool(name, arguments)
            persist("ObservationEvent", "environment", tool_name=name, tool_call_id=call["id"],
                    observation=observation, action_id=event["id"])
            update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": call["id"], "status": "completed",
                                "content": [{"type": "content", "content": {"type": "text", "text": text}}]})
            finished = finished or name == "finish"
        if finished:
            break
    save_state(STATE["conversation_id"], STATE["cwd"], "finished")
    send({"id": message["id"], "result": {"stopReason": "end_turn"}})


def main() -> None:
    threading.Thread(target=reader, daemon=True).start()
    while True:
        message = INBOX.get()
        method, params = message.get("method"), message.get("params") or {}
        if method == "__eof__":
            return
        if method == "initialize":
            send({"id": message["id"], "result": {"protocolVersion": 1, "agentInfo": {"name": "openhands-stand-in",
                                                                                        "version": "1.28.1"},
                                                  "agentCapabilities": {"loadSession": False}, "authMethods": []}})
        elif method == "session/new":
            STATE["cwd"] = params.get("cwd") or STATE["cwd"]
            open_conversation(STATE["cwd"])
            send({"id": message["id"], "result": {"sessionId": STATE["conversation_id"]}})
        elif method == "session/prompt":
            handle_prompt(message)
        elif "id" in message:
            send({"id": message["id"], "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
