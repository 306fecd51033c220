"""A deliberately misbehaving ACP agent for process tests (stdlib only).

Usage: ``python fault_agent.py MODE``. Each mode breaks one rule, or exercises one quirk
real agents have, at a precise point of the conversation; everything else is a plain,
correct ACP v1 agent. The answer of a normal turn is ``ANSWER``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
SESSION = "fault_session_1"
OUT = sys.stdout.buffer
_pending: list[dict[str, Any]] = []  # messages read while waiting for a reply


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    OUT.flush()


def raw(text: bytes) -> None:
    OUT.write(text)
    OUT.flush()


def read() -> dict[str, Any] | None:
    if _pending:
        return _pending.pop(0)
    line = sys.stdin.buffer.readline()
    if not line:
        return None
    return json.loads(line)  # type: ignore[no-any-return]


def update(update_kind: str, **fields: Any) -> None:
    send(
        {
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": {"sessionUpdate": update_kind, **fields}},
        }
    )


def chunk(text: str, **extra: Any) -> None:
    update("agent_message_chunk", content={"type": "text", "text": text}, **extra)


def call(method: str, params: dict[str, Any], request_id: Any) -> dict[str, Any]:
    """A request to the client; reads until its reply (keeping anything else for later)."""
    send({"id": request_id, "method": method, "params": params})
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        message = json.loads(line)
        if "method" not in message and message.get("id") == request_id:
            return message  # type: ignore[no-any-return]
        _pending.append(message)


def hang() -> None:
    while True:
        time.sleep(3600)


def initialize_result() -> dict[str, Any]:
    result: dict[str, Any] = {
        "protocolVersion": 2 if MODE == "version-2" else 1,
        "agentCapabilities": {"loadSession": False, "sessionCapabilities": {}},
        "authMethods": [],
        "agentInfo": {"name": "fault-agent", "version": "0"},
    }
    if MODE == "auth-env":
        result["authMethods"] = [
            {"id": "browser", "name": "Browser login"},
            {
                "type": "env_var",
                "id": "fake-key",
                "name": "Use FAKE_AGENT_KEY",
                "vars": [{"name": "FAKE_AGENT_KEY"}],
            },
        ]
    if MODE == "auth-login":  # as gemini: only logins the agent drives (a browser), no env_var
        result["authMethods"] = [
            {"id": "oauth-personal", "name": "Log in with Google"},
            {"id": "gemini-api-key", "name": "Use Gemini API key"},
        ]
    if MODE == "auth-terminal":
        result["authMethods"] = [
            {"type": "terminal", "id": "login", "name": "Log in", "args": ["--login"]}
        ]
    if MODE == "malformed-initialize":
        del result["protocolVersion"]
    if MODE == "login-status":  # as claude-agent-acp: its auth status follows session/new
        result["agentCapabilities"]["_meta"] = {"authStatus": {}}
    return result


def login_status() -> None:
    """claude-agent-acp's notification after session/new: logged in with a key, or not."""
    key = os.environ.get("FAKE_AGENT_KEY")
    status = (
        {"kind": "api_key", "label": "Fake API key", "detail": "FAKE_AGENT_KEY"}
        if key
        else {"kind": "none", "label": "Not logged in"}
    )
    send({"method": "_auth/status_update", "params": {"authStatus": status}})


def prompt(message: dict[str, Any]) -> None:
    """Answer one session/prompt according to MODE."""
    rid = message["id"]

    def reply(stop: str = "end_turn") -> None:
        send({"id": rid, "result": {"stopReason": stop}})

    if MODE == "crash-mid-turn":
        chunk("partial answer")
        sys.stderr.write("fatal: the agent fell over mid-turn\n")
        sys.stderr.flush()
        os._exit(1)
    if MODE in ("hang-mid-turn", "grandchildren"):
        chunk("thinking...")
        hang()
    if MODE == "cancel-aware":
        chunk("partial before cancel")
        while (incoming := read()) is not None:
            if incoming.get("method") == "session/cancel":
                reply("cancelled")
                return
    if MODE == "huge-line":
        chunk("x" * (20 * 1024 * 1024))
        reply()
        return
    if MODE == "stderr-flood":
        block = b"log line that nobody reads " * 40 + b"\n"
        for _ in range((50 * 1024 * 1024) // len(block) + 1):
            sys.stderr.buffer.write(block)
        sys.stderr.buffer.write(b"LAST STDERR LINE\n")
        sys.stderr.flush()
    if MODE == "garbage-stdout":
        raw(b'Loading model weights...\n\n[INFO] agent ready\n{"oops": \n')
        chunk("ANS")
        raw(b"\x00\xff not utf-8 at all\n")
        chunk("WER")
        reply()
        return
    if MODE == "unknown-updates":
        update("future_update_kind", payload={"anything": [1, 2, 3]})
        update(
            "agent_message_chunk",
            content={"type": "text", "text": "ANSWER"},
            brandNewField={"x": 1},
        )
        send({"method": "session/update", "params": {"sessionId": SESSION, "update": "nope"}})
        update("tool_call_update", toolCallId=None)  # malformed: must not end the run
        send({"method": "_vendor/notification", "params": {}})
        reply()
        return
    if MODE == "late-updates":
        chunk("ANS", messageId="m1")
        reply()
        time.sleep(0.05)
        chunk("WER", messageId="m1")
        return
    if MODE == "permission-before-tool-call":
        answer = call(
            "session/request_permission",
            {
                "sessionId": SESSION,
                "toolCall": {
                    "toolCallId": "call_9",
                    "title": "Edit notes.md",
                    "kind": "edit",
                    "locations": [{"path": os.path.join(os.getcwd(), "notes.md")}],
                },
                "options": [
                    {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "no", "name": "No", "kind": "reject_once"},
                ],
            },
            0,
        )
        update(
            "tool_call",
            toolCallId="call_9",
            title="Edit notes.md",
            kind="edit",
            status="in_progress",
        )
        update("tool_call_update", toolCallId="call_9", status="completed")
        chunk(json.dumps(answer["result"]))
        reply()
        return
    if MODE == "string-ids":
        path = os.path.join(os.getcwd(), "hello.txt")
        answer = call("fs/read_text_file", {"sessionId": SESSION, "path": path}, "req-abc")
        missing = call(
            "fs/read_text_file", {"sessionId": SESSION, "path": path + ".missing"}, "req-def"
        )
        chunk(f"{answer['result']['content'].strip()}|{missing['error']['code']}")
        reply()
        return
    if MODE in ("refusal", "max_tokens", "max_turn_requests", "brand_new_stop"):
        chunk("partial")
        reply(MODE)
        return
    if MODE == "json-on-second-try":  # prose first; after the repair prompt, JSON
        text = message["params"]["prompt"][0]["text"]
        chunk('{"ok": true, "value": 7}' if "previous answer" in text else "Sure! Here it is.")
        reply()
        return
    if MODE == "narration":
        chunk("Let me look at the files first.")  # no messageId: a tool call ends it
        update("tool_call", toolCallId="t1", title="ls", kind="execute", status="completed")
        chunk("ANS")
        chunk("WER")
        reply()
        return
    chunk("ANSWER")
    reply()


def spawn_grandchildren() -> None:
    """Two grandchildren that ignore SIGTERM, and the agent itself ignores it too."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for _ in range(2):
        subprocess.Popen(
            ["/bin/sh", "-c", "trap '' TERM; sleep 300"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )


def model_configured() -> bool:
    """``no-model``: a model to answer with is a key (``FAKE_AGENT_KEY``) or its own login
    file (the path in ``FAULT_AGENT_LOGIN``)."""
    login = os.environ.get("FAULT_AGENT_LOGIN", "")
    return bool(os.environ.get("FAKE_AGENT_KEY")) or (bool(login) and os.path.isfile(login))


def main() -> None:
    if MODE == "grandchildren":
        spawn_grandchildren()
    authenticated = False
    while (message := read()) is not None:
        method, rid = message.get("method"), message.get("id")
        if method is None:
            continue
        if method == "initialize":
            if MODE == "crash-before-initialize":
                sys.stderr.write("boom: cannot start\n")
                sys.exit(3)
            if MODE == "hang-at-initialize":
                hang()
            send({"id": rid, "result": initialize_result()})
        elif method == "authenticate":
            authenticated = message["params"]["methodId"] == "fake-key"
            send({"id": rid, "result": {}})
        elif method == "session/new":
            if MODE == "close-stdin-first":  # closes it before it answers: every write fails
                os.close(0)
                send({"id": rid, "result": {"sessionId": SESSION}})
                chunk("stopped listening")
                hang()
            if MODE.startswith("auth-") and not authenticated:
                send({"id": rid, "error": {"code": -32000, "message": "Authentication required"}})
                continue
            if MODE == "hang-at-session":
                hang()
            if MODE == "crash-at-session":
                sys.stderr.write("fatal: cannot open a session here\n")
                sys.exit(4)
            if MODE == "early-updates":
                update("available_commands_update", availableCommands=[])
                chunk("greeting before the session even exists")
            send({"id": rid, "result": {"sessionId": SESSION}})
            if MODE == "login-status":
                login_status()
            if MODE == "close-stdin":  # stops listening, keeps running: our writes now fail
                os.close(0)
                chunk("stopped listening")
                hang()
        elif method == "session/prompt":
            if MODE in ("close-stdout", "close-both"):  # a word, then silence, still running
                chunk("closing my stdout")
                if MODE == "close-both":
                    os.close(0)
                os.close(1)
                hang()
            if MODE == "no-model" and not model_configured():
                hang()  # as opencode with no provider: the session opened, no answer comes
            prompt(message)
        elif rid is not None:
            send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
