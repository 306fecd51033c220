"""A spy ACP agent (stdlib only): advertises what its script says and records every message
it receives, so a test can check which methods the client called, in which order, and only
when advertised.

Usage: ``python spy_agent.py SCRIPT.json``. The script (all keys optional)::

    record        path of the JSONL file every received message is appended to
    initialize    merged into the initialize result (agentCapabilities, authMethods, …)
    echo_version  answer initialize with the protocolVersion asked for, whatever it is (as
                  fast-agent 0.10.45-0.10.48 and goose 1.52 do), the rest in v1's shape
    v1            merged over the script when initialize asks for version 1 (a key set to
                  null is removed): an agent that speaks v2, or v1 when asked for it
    session       merged into the session/new reply (modes, models, configOptions, …)
    setup         merged into the session/load, resume and fork replies
    sessions      the SessionInfo list session/list pages through (pageSize per page)
    replay        updates sent before the session/load reply (the history)
    resumed       updates sent before the session/resume reply (v2: the state snapshot)
    hang          methods never answered
    errors        method → JSON-RPC error object to answer instead
    prompt        steps of a prompt turn, in order:
                  {"update": {...}, "session"?: ID}  send this session/update (of ID)
                  {"say": "text", "messageId": "m"}  an agent_message_chunk
                  {"request": M, "params": {...}, "cancel": true?}
                      ask the client; with cancel, send $/cancel_request for it at once
                  {"wait_cancel": true}              until session/cancel: stopReason cancelled
                  {"sleep": seconds}                 pause (the agent working, silently)
                  {"raw": "text"}                    write this text as one line, as it is
                                                     (%SESSION% becomes the session id)
                  {"raw_request": "text with %ID%"}  the same, a request: %ID% becomes its
                                                     id ("spy-N"), and its reply is awaited
                  {"mcp": [{"tool": T, "arguments": {...}}, ...]}
                      call these tools of the client's MCP server ``acp-bridge`` (from the
                      session's mcpServers; tests/agents/mcp_client.py): each reply is kept
    answer        the turn's last message (default: the JSON list of replies to requests)
    prompt_reply  v2: the prompt is acknowledged at once with this result ({} or
                  {"messageId": …}); the turn then ends with a state_update idle whose stop
                  reason is ``stop`` (default end_turn), not with a reply
    raw_reply     v1: the raw text of the prompt's reply line, %ID% for the request's id
    after_reply   raw lines written right after the prompt's reply (%SESSION% as above),
                  after_reply_pause seconds after it

Unknown methods are answered -32601; every request the client sends is still recorded.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

SCRIPT: dict[str, Any] = {}
if len(sys.argv) > 1:
    with open(sys.argv[1]) as script:
        SCRIPT = json.load(script)
SESSION = SCRIPT.get("sessionId", "spy-session-1")
SERVERS: list[dict[str, Any]] = []  # the mcpServers of the session set up last
OUT = sys.stdout.buffer
_pending: list[dict[str, Any]] = []
_config_options: list[dict[str, Any]] = list(
    SCRIPT.get("session", {}).get("configOptions")
    or SCRIPT.get("setup", {}).get("configOptions", [])
)


def record(message: dict[str, Any]) -> None:
    path = SCRIPT.get("record")
    if path:
        with open(path, "a") as log:
            log.write(json.dumps(message) + "\n")


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    OUT.flush()


def read() -> dict[str, Any] | None:
    if _pending:
        return _pending.pop(0)
    line = sys.stdin.buffer.readline()
    if not line:
        return None
    message: dict[str, Any] = json.loads(line)
    record(message)
    return message


def update(session_id: str, body: dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": session_id, "update": body}})


def call_raw(line: str, request_id: str) -> dict[str, Any]:
    OUT.write(line.replace("%ID%", json.dumps(request_id)).encode() + b"\n")
    OUT.flush()
    return reply_to(request_id)


def call(method: str, params: dict[str, Any], request_id: Any, cancel: bool) -> dict[str, Any]:
    send({"id": request_id, "method": method, "params": params})
    if cancel:
        send({"method": "$/cancel_request", "params": {"requestId": request_id}})
    return reply_to(request_id)


def reply_to(request_id: Any) -> dict[str, Any]:
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        message = json.loads(line)
        record(message)
        if "method" not in message and message.get("id") == request_id:
            return message  # type: ignore[no-any-return]
        _pending.append(message)


def end_turn(request_id: Any, session_id: str, stop: str) -> None:
    if "raw_reply" in SCRIPT:  # the reply as the script spells it, numbers and all
        OUT.write(SCRIPT["raw_reply"].replace("%ID%", json.dumps(request_id)).encode() + b"\n")
        OUT.flush()
    elif "prompt_reply" in SCRIPT:  # v2: the reply went out first; idle ends the turn
        update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop})
    else:
        send({"id": request_id, "result": {"stopReason": stop}})


def prompt(request_id: Any, session_id: str) -> None:
    replies: list[Any] = []
    if "prompt_reply" in SCRIPT:
        send({"id": request_id, "result": SCRIPT["prompt_reply"]})
    for number, step in enumerate(SCRIPT.get("prompt", [])):
        if "update" in step:  # "session": another session's update (a child's)
            update(step.get("session", session_id), step["update"])
        elif "say" in step:
            chunk = {"sessionUpdate": "agent_message_chunk"}
            chunk["content"] = {"type": "text", "text": step["say"]}
            if "messageId" in step:
                chunk["messageId"] = step["messageId"]
            update(session_id, chunk)
        elif "request" in step:
            params = {"sessionId": session_id, **step.get("params", {})}
            reply = call(step["request"], params, f"spy-{number}", step.get("cancel", False))
            replies.append(reply.get("result", reply.get("error")))
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "raw" in step:
            OUT.write(step["raw"].replace("%SESSION%", session_id).encode() + b"\n")
            OUT.flush()
        elif "raw_request" in step:
            line = step["raw_request"].replace("%SESSION%", session_id)
            reply = call_raw(line, f"spy-{number}")
            replies.append(reply.get("result", reply.get("error")))
        elif "mcp" in step:
            replies += use_tools(step["mcp"])
        elif step.get("wait_cancel"):
            while (message := read()) is not None:
                if message.get("method") == "session/cancel":
                    if message["params"]["sessionId"] != session_id:
                        continue  # a child's cancel: recorded, the parent goes on waiting
                    end_turn(request_id, session_id, "cancelled")
                    return
    answer = SCRIPT.get("answer", json.dumps(replies))
    if answer:
        text = {"type": "text", "text": answer}
        update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text})
    end_turn(request_id, session_id, SCRIPT.get("stop", "end_turn"))
    if SCRIPT.get("after_reply"):
        time.sleep(SCRIPT.get("after_reply_pause", 0))  # so the reply is read on its own
    for line in SCRIPT.get("after_reply", []):
        OUT.write(line.replace("%SESSION%", session_id).encode() + b"\n")
        OUT.flush()


def use_tools(calls: list[dict[str, Any]]) -> list[Any]:
    from mcp_client import McpClient  # beside this file

    (server,) = [s for s in SERVERS if s.get("name") == "acp-bridge"]
    client = McpClient(server)
    try:
        replies = [client.tool(call["tool"], call.get("arguments", {})) for call in calls]
    finally:
        client.close()
    return [reply.get("result", reply.get("error")) for reply in replies]


def result_for(method: str, params: dict[str, Any]) -> Any:
    if method in ("session/new", "session/resume", "session/load", "session/fork"):
        SERVERS[:] = params.get("mcpServers") or []
    if method == "initialize":
        if params.get("protocolVersion") == 1 and "v1" in SCRIPT:
            for key, value in SCRIPT.pop("v1").items():
                if value is None:
                    SCRIPT.pop(key, None)
                else:
                    SCRIPT[key] = value
        reply = {
            "protocolVersion": 1,
            "agentCapabilities": {},
            "authMethods": [],
            "agentInfo": {"name": "spy-agent", "version": "1"},
            **SCRIPT.get("initialize", {}),
        }
        if SCRIPT.get("echo_version"):
            reply["protocolVersion"] = params.get("protocolVersion")
        return reply
    if method == "session/new":
        return {"sessionId": SESSION, **SCRIPT.get("session", {})}
    if method in ("session/load", "session/resume"):
        if method == "session/load":
            for body in SCRIPT.get("replay", []):
                update(params["sessionId"], body)
            return None if not SCRIPT.get("setup") else SCRIPT["setup"]
        for body in SCRIPT.get("resumed", []):
            update(params["sessionId"], body)
        return SCRIPT.get("setup", {})
    if method == "session/fork":
        return {"sessionId": f"{params['sessionId']}-fork", **SCRIPT.get("setup", {})}
    if method == "session/list":
        sessions = SCRIPT.get("sessions", [])
        size = SCRIPT.get("pageSize", len(sessions) or 1)
        start = int(params.get("cursor") or 0)
        if params.get("cwd"):
            sessions = [s for s in sessions if s.get("cwd") == params["cwd"]]
        page: dict[str, Any] = {"sessions": sessions[start : start + size]}
        if start + size < len(sessions):
            page["nextCursor"] = str(start + size)
        return page
    if method == "session/set_config_option":
        for option in _config_options:
            if option.get("id", option.get("configId")) == params["configId"]:  # v1, v2
                option["currentValue"] = params["value"]
        return {"configOptions": _config_options}
    if method in (
        "authenticate",
        "auth/login",
        "auth/logout",
        "session/set_mode",
        "session/set_model",
        "session/close",
        "session/delete",
        "logout",
    ):
        return {}
    raise KeyError(method)


def main() -> None:
    while (message := read()) is not None:
        method = message.get("method")
        if method is None or "id" not in message:
            continue  # replies to nothing pending, notifications (recorded already)
        request_id = message["id"]
        if method in SCRIPT.get("hang", []):
            continue
        if method in SCRIPT.get("errors", {}):
            send({"id": request_id, "error": SCRIPT["errors"][method]})
            continue
        if method == "session/prompt":
            prompt(request_id, message["params"]["sessionId"])
            continue
        try:
            result = result_for(method, message.get("params") or {})
        except KeyError:
            send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})
            continue
        send({"id": request_id, "result": result})


if __name__ == "__main__":
    main()
