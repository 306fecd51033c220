"""A hostile ACP agent for the hardening tests (stdlib only): it answers the handshake like a
normal agent, then attacks in the way MODE names.

Usage: ``python unruly_agent.py MODE [N]``. Modes:

- ``deaf``: after ``session/new`` it stops reading stdin for good, sends a partial answer,
  then floods requests whose replies fill its stdin pipe, and sleeps (SIGTERM ignored).
- ``sprawl N``: creates ``big.bin`` in its cwd, a sparse file of N MiB (no disk, but git
  hashes every byte to measure the change), then goes ``deaf``.
- ``flood N``: sends N agent→client requests without waiting for replies (a thread reads
  them), waits for every reply, then answers ``FLOOD-DONE <replies read> replies``.
- ``malformed``: sends every kind of malformed message it knows, then ``ANSWER``.
- ``bad-result``: a partial answer, some stderr, then a prompt reply whose result is a list.
- ``bad-session``: ``session/new`` answered with ``{"sessionId": [1]}``.
- ``chatty N``: N message chunks of 1 KiB, then the answer (for the transcript cap).
- ``self-cancel``: ends its own turn with ``stopReason: cancelled``, unasked.
- ``slow-exit``: answers, then ignores SIGTERM and stdin EOF (shutdown needs SIGKILL).
- ``snoop``: tries to read its parent's (the bridge's) ``/proc/<ppid>/environ``; answers
  ``READ: <the environment>`` or ``REFUSED: <why>``.
- ``chores``: a thought, a line on stderr, a served read of ``hello.txt``, and a terminal
  (``sleep 30``) that outlives ``terminal.timeout``; answers with what it was told.
- ``painted``: every text of the JSON list in the file ``UNRULY_TEXTS`` goes into each
  field a printer shows — a thought, a tool call's title and status, a plan entry, a
  permission request's title and option, a line on stderr — and the answer is them all,
  one per line (for the terminal sanitizer).
- ``zed``: like zed's claude-code-acp: a ``tool_call`` update says ``kind: execute``, title
  ``run echo hello`` and (unless N is 0) ``rawInput.command``; the permission request that
  follows leaves ``kind`` out; then ``terminal/create`` runs ``echo hello`` (or the line in
  ``HOSTILE_COMMAND``). Answers with a JSON report of what it was told.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "malformed"
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
SESSION = "hostile_session_1"
OUT = sys.stdout.buffer
_lock = threading.Lock()


def raw(data: bytes) -> None:
    with _lock:
        OUT.write(data)
        OUT.flush()


def send(message: dict[str, Any]) -> None:
    raw(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")


def update(update_kind: Any, **fields: Any) -> None:
    send(
        {
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": {"sessionUpdate": update_kind, **fields}},
        }
    )


def chunk(text: str, **extra: Any) -> None:
    update("agent_message_chunk", content={"type": "text", "text": text}, **extra)


def read() -> dict[str, Any] | None:
    line = sys.stdin.buffer.readline()
    return json.loads(line) if line else None


def handshake() -> dict[str, Any] | None:
    """Answer initialize and session/new; return the session/prompt request."""
    while (message := read()) is not None:
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            info = {"name": "hostile-agent", "version": "0"}
            result = {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": info}
            send({"id": rid, "result": result})
        elif method == "session/new":
            if MODE == "bad-session":
                send({"id": rid, "result": {"sessionId": [1]}})
                continue
            send({"id": rid, "result": {"sessionId": SESSION}})
            if MODE == "deaf":
                return None
        elif method == "session/prompt":
            return message
        elif rid is not None:
            send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})
    return None


def deaf(requests: int = COUNT) -> None:
    """Never read again: our stdin fills with the bridge's replies and its prompt."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(0.3)  # the bridge starts its turn right after session/new
    chunk("partial before going deaf")
    sys.stderr.write("hostile: not reading stdin any more\n")
    sys.stderr.flush()
    path = os.path.join(os.getcwd(), "missing.txt")
    for n in range(requests):
        params = {"sessionId": SESSION, "path": path}
        send({"id": n, "method": "fs/read_text_file", "params": params})
    while True:
        time.sleep(3600)


def flood(prompt_id: Any) -> None:
    replies = [0]

    def drain() -> None:  # a sane agent reads its replies, just not before it is done asking
        while read() is not None:
            replies[0] += 1

    threading.Thread(target=drain, daemon=True).start()
    path = os.path.join(os.getcwd(), "hello.txt")
    methods = [
        ("fs/read_text_file", {"sessionId": SESSION, "path": path}),
        ("terminal/output", {"sessionId": SESSION, "terminalId": "nope"}),
        ("x/unknown", {}),
    ]
    for n in range(COUNT):
        method, params = methods[n % len(methods)]
        send({"id": f"r{n}", "method": method, "params": params})
    deadline = time.monotonic() + 60
    while replies[0] < COUNT and time.monotonic() < deadline:
        time.sleep(0.005)
    chunk(f"FLOOD-DONE {replies[0]} replies")
    send({"id": prompt_id, "result": {"stopReason": "end_turn"}})


DEEP = b"[" * 100_000 + b"]" * 100_000


def malformed(prompt_id: Any) -> None:
    lines = [
        b'{"jsonrpc":"2.0","id":true,"result":{"stopReason":"end_turn"}}',  # bool is no id
        b'{"jsonrpc":"2.0","id":[1],"method":"fs/read_text_file","params":{}}',
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"x","params":{}}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"x","params":{}}',
        b'{"jsonrpc":"2.0","id":null,"method":"x"}',
        b'{"jsonrpc":"2.0","method":["session/update"],"params":{}}',
        b'{"jsonrpc":"2.0","method":"session/update","params":[1,2]}',
        b'{"jsonrpc":"2.0","method":"session/update","params":"nope"}',
        b'{"jsonrpc":"2.0","id":99,"method":"fs/read_text_file","params":[1]}',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"update":' + DEEP + b"}}",
        b'{"jsonrpc":"2.0","method":"session/update","params":{"x":'
        + b"[" * 200
        + b"]" * 200
        + b"}}",
        b'{"jsonrpc":"2.0","method":"session/update","params":{"n":1' + b"0" * 5000 + b"}}",
        b'{"jsonrpc":"2.0","method":"session/update","params":{"n":1e999}}',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"n":NaN}}',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"n":-Infinity}}',
        b'{"jsonrpc":"2.0","method":"session/update","params":{"t":"\xff\xfe"}}',
        b'{"jsonrpc":"2.0","id":424242,"result":{}}',  # a reply to nothing we asked
        b'{"jsonrpc":"2.0","id":1,"result":{"again":true}}',  # initialize, answered twice
        b'{"jsonrpc":"2.0","id":"1","result":{}}',
        b'{"jsonrpc":"2.0","id":' + b"9" * 400 + b',"result":{}}',
        b'{"jsonrpc":"2.0","id":2,"error":"not an object"}',
        b'{"jsonrpc":"2.0","id":2,"error":{"code":"x","message":[1]}}',
        b'{"jsonrpc":"2.0"}',
        b"[1,2,3]",
        b'"a string"',
    ]
    for line in lines:
        raw(line + b"\n")
    updates: list[dict[str, Any]] = [
        {"sessionUpdate": {"kind": "object as kind"}},
        {"sessionUpdate": ["list"]},
        {"sessionUpdate": 7},
        {"sessionUpdate": None},
        {"sessionUpdate": "x" * 10_000},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": ["no"]}},
        {"sessionUpdate": "agent_message_chunk", "content": "text", "messageId": "m0"},
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "lost"},
            "messageId": ["a", "list"],
        },
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "lost"},
            "messageId": {"an": "object"},
        },
        {"sessionUpdate": "tool_call", "toolCallId": ["t"], "title": "x"},
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": {"a": 1}},
        {"sessionUpdate": "tool_call", "toolCallId": "t2", "locations": "nowhere"},
        {"sessionUpdate": "tool_call_update", "toolCallId": None},
        {"sessionUpdate": "plan", "entries": "not a list"},
        {"sessionUpdate": "usage_update", "used": "many", "cost": [1]},
        {"sessionUpdate": "usage_update", "used": 5, "cost": {"amount": "lots", "currency": 1}},
        {"sessionUpdate": "current_mode_update", "currentModeId": {"x": 1}},
        {"sessionUpdate": "agent_thought_chunk", "content": 5},
    ]
    for item in updates:
        send({"method": "session/update", "params": {"sessionId": SESSION, "update": item}})
    # A lone surrogate is legal JSON text and not encodable as UTF-8: repaired, not fatal.
    raw(
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\\ud800"},'
        b'"messageId":"sur"}}}\n'
    )
    chunk("ANS", messageId="final")
    chunk("WER", messageId="final")
    usage = {"inputTokens": True, "outputTokens": 3, "totalTokens": "x"}
    send({"id": prompt_id, "result": {"stopReason": "end_turn", "usage": usage}})


def call(method: str, params: dict[str, Any], request_id: str) -> dict[str, Any]:
    """A request to the client and its reply (anything else read meanwhile is dropped)."""
    send({"id": request_id, "method": method, "params": params})
    while (message := read()) is not None:
        if "method" not in message and message.get("id") == request_id:
            return message
    sys.exit(0)


def zed(prompt_id: Any) -> None:
    tool: dict[str, Any] = {"toolCallId": "call_zed", "title": "run echo hello"}
    command = os.environ.get("HOSTILE_COMMAND", "echo hello")
    raw_input = {"command": command, "description": "say hello"} if COUNT else None
    update("tool_call", kind="execute", status="pending", rawInput=raw_input, **tool)
    options = [
        {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
        {"optionId": "no", "name": "No", "kind": "reject_once"},
    ]
    asked = call(
        "session/request_permission",
        {"sessionId": SESSION, "toolCall": tool, "options": options},  # no kind, as zed
        "p1",
    )
    report: dict[str, Any] = {"permission": asked.get("result", asked.get("error"))}
    created = call("terminal/create", {"sessionId": SESSION, "command": command}, "t1")
    if "result" in created:
        ref = {"sessionId": SESSION, "terminalId": created["result"]["terminalId"]}
        call("terminal/wait_for_exit", ref, "t2")
        report["output"] = call("terminal/output", ref, "t3")["result"]["output"]
    else:
        report["terminal_error"] = created["error"]["message"]
    chunk(json.dumps(report))
    send({"id": prompt_id, "result": {"stopReason": "end_turn"}})


def painted(prompt_id: Any) -> None:
    with open(os.environ["UNRULY_TEXTS"], encoding="utf-8") as file:
        texts: list[str] = json.load(file)
    for n, text in enumerate(texts):
        update("agent_thought_chunk", content={"type": "text", "text": text + "\n"})
        tool = {"toolCallId": f"call_{n}", "title": text}
        update("tool_call", kind="other", status="pending", **tool)
        update("tool_call_update", toolCallId=f"call_{n}", status="completed", title=text)
        update("plan", entries=[{"content": text, "priority": "low", "status": "pending"}])
        options = [{"optionId": "no", "name": text, "kind": "reject_once"}]
        call(
            "session/request_permission",
            {"sessionId": SESSION, "toolCall": tool, "options": options},
            f"p{n}",
        )
        sys.stderr.buffer.write(text.encode("utf-8", "surrogatepass") + b"\n")
        sys.stderr.flush()
    chunk("\n".join(texts), messageId="answer")
    send({"id": prompt_id, "result": {"stopReason": "end_turn"}})


def chores(prompt_id: Any) -> None:
    update("agent_thought_chunk", content={"type": "text", "text": "pondering"})
    sys.stderr.write("a line on stderr\n")
    sys.stderr.flush()
    path = os.path.join(os.getcwd(), "hello.txt")
    read = call("fs/read_text_file", {"sessionId": SESSION, "path": path}, "r1")
    created = call("terminal/create", {"sessionId": SESSION, "command": "sleep 30"}, "t1")
    ref = {"sessionId": SESSION, "terminalId": created["result"]["terminalId"]}
    status = call("terminal/wait_for_exit", ref, "t2")["result"]
    chunk(json.dumps({"read": read["result"]["content"], "exit": status}))
    send({"id": prompt_id, "result": {"stopReason": "end_turn"}})


def main() -> None:
    prompt = handshake()
    if MODE == "deaf":
        deaf()
    if MODE == "sprawl":
        with open("big.bin", "wb") as file:
            file.truncate(COUNT << 20)
        deaf(requests=10)
    if prompt is None:
        return
    rid = prompt["id"]
    if MODE == "flood":
        flood(rid)
    elif MODE == "malformed":
        malformed(rid)
    elif MODE == "bad-result":
        chunk("partial answer kept")
        sys.stderr.write("hostile: about to send a list as the prompt result\n")
        sys.stderr.flush()
        send({"id": rid, "result": [{"stopReason": "end_turn"}]})
    elif MODE == "chatty":
        for n in range(COUNT):
            chunk(f"{n:08d}" + "x" * 1016)
        chunk("\nEND", messageId=None)
        send({"id": rid, "result": {"stopReason": "end_turn"}})
    elif MODE == "zed":
        zed(rid)
    elif MODE == "chores":
        chores(rid)
    elif MODE == "painted":
        painted(rid)
    elif MODE == "snoop":
        try:
            with open(f"/proc/{os.getppid()}/environ", "rb") as file:
                chunk("READ: " + file.read().decode(errors="replace"))
        except OSError as exc:
            chunk(f"REFUSED: {exc.strerror}")
        send({"id": rid, "result": {"stopReason": "end_turn"}})
    elif MODE == "self-cancel":
        chunk("I give up")
        send({"id": rid, "result": {"stopReason": "cancelled"}})
    elif MODE == "slow-exit":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        chunk("ANSWER")
        send({"id": rid, "result": {"stopReason": "end_turn"}})
        while True:
            time.sleep(3600)
    # Stay for the shutdown: read until stdin closes.
    while read() is not None:
        pass


if __name__ == "__main__":
    main()
