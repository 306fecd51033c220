"""An ACP agent (stdlib only) that writes where it is told, in its own process or through the
client, and asks for permission in the shapes real agents do (issue 33).

Usage: ``python told_agent.py [--home DIR] [--quiet]``. With ``--home DIR`` (fast-agent's
flag) it writes ``DIR/state.json`` as it starts, and so does it for the folder in
``$TOLD_HOME`` (an agent's own relocation variable, such as ``CODEX_HOME``); when it cannot,
it says so on stderr and exits 1 before ``initialize`` is answered — naming the path, or,
with ``--quiet``, in words that name none (kimi: "storage write failed") — with every
``*TOLD_*`` variable it was given and its value.

The prompt is a JSON list of steps, run in order; the answer is the JSON list of what each
did:

    {"announce": TOOLCALL}             a ``tool_call`` session/update: "announced"
    {"ask": TOOLCALL}                  session/request_permission with this toolCall
                                       (toolCallId "call-N" unless given): "allowed" or
                                       "rejected", by the option picked
    {"write": PATH, "content": S}      write PATH itself, in its process: "wrote", or the
                                       error; skipped ("not allowed") when the step before
                                       was an ``ask`` that was refused
    {"fs_write": PATH, "content": S}   fs/write_text_file: "wrote", or the client's error
    {"terminal": COMMAND, "args": [...], "cwd": P?}
                                       terminal/create, wait, output, release: the output,
                                       or the client's error
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

SESSION = "told_session_1"
OUT = sys.stdout.buffer
_ids = iter(range(1, 1_000_000))


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    OUT.flush()


def read() -> dict[str, Any] | None:
    line = sys.stdin.buffer.readline()
    return json.loads(line) if line else None


def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request to the client and its reply (``{"result"}`` or ``{"error"}``)."""
    request_id = f"told-{next(_ids)}"
    send({"id": request_id, "method": method, "params": {"sessionId": SESSION, **params}})
    while (message := read()) is not None:
        if message.get("id") == request_id and "method" not in message:
            return message
    raise SystemExit(0)


def start_up() -> None:
    """Write the state folders it is given, as agents do before they answer anything."""
    args = sys.argv[1:]
    homes = [args[args.index("--home") + 1]] if "--home" in args else []
    homes += [os.environ["TOLD_HOME"]] if os.environ.get("TOLD_HOME") else []
    for home in homes:
        path = Path(home, "state.json")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
        except OSError as exc:
            said = "storage write failed" if "--quiet" in args else f"cannot write {path}"
            told = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if "TOLD_" in k)
            print(f"told_agent: {said}: {exc.strerror} ({told})", file=sys.stderr, flush=True)
            raise SystemExit(1) from None


def step(item: dict[str, Any], last: str | None) -> str:
    if "announce" in item:
        update = {"sessionUpdate": "tool_call", **item["announce"]}
        send({"method": "session/update", "params": {"sessionId": SESSION, "update": update}})
        return "announced"
    if "ask" in item:
        tool = {"toolCallId": f"call-{next(_ids)}", **item["ask"]}
        options = [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Deny", "kind": "reject_once"},
        ]
        reply = call("session/request_permission", {"toolCall": tool, "options": options})
        outcome = reply.get("result", {}).get("outcome", {})
        return "allowed" if outcome.get("optionId") == "yes" else "rejected"
    if "write" in item:
        if last == "rejected":
            return "not allowed"
        try:
            Path(item["write"]).write_text(item.get("content", ""))
        except OSError as exc:
            return f"error: {exc.strerror}"
        return "wrote"
    if "fs_write" in item:
        params = {"path": item["fs_write"], "content": item.get("content", "")}
        reply = call("fs/write_text_file", params)
        return "wrote" if "result" in reply else f"error: {reply['error'].get('message')}"
    if "terminal" in item:
        params = {"command": item["terminal"], "args": item.get("args", [])}
        if "cwd" in item:
            params["cwd"] = item["cwd"]
        created = call("terminal/create", params)
        if "error" in created:
            return f"error: {created['error'].get('message')}"
        terminal = {"terminalId": created["result"]["terminalId"]}
        call("terminal/wait_for_exit", terminal)
        output = call("terminal/output", terminal).get("result", {}).get("output", "")
        call("terminal/release", terminal)
        return str(output)
    return f"unknown step {item!r}"


def main() -> None:
    start_up()
    while (message := read()) is not None:
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            send({"id": rid, "result": result})
        elif method == "session/new":
            send({"id": rid, "result": {"sessionId": SESSION}})
        elif method == "session/prompt":
            text = "".join(b.get("text", "") for b in message["params"]["prompt"])
            done: list[str] = []
            for item in json.loads(text):
                done.append(step(item, done[-1] if done else None))
            answer = {"type": "text", "text": json.dumps(done)}
            update = {"sessionUpdate": "agent_message_chunk", "content": answer}
            send({"method": "session/update", "params": {"sessionId": SESSION, "update": update}})
            send({"id": rid, "result": {"stopReason": "end_turn"}})
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
