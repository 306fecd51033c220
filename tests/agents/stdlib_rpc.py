"""The JSON-RPC side of the stdlib test agents that act on their own (``hostile_agent.py``,
``repository_hostile_agent.py``): one line per message on stdio, a request to the client
that waits for its own answer, and the loop that answers initialize, session/new and
session/prompt. Imported as a sibling module: those agents run as scripts, inside the
sandbox, where only the standard library is certain to be there."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

OUT = sys.stdout.buffer
_ids = iter(range(1000, 10_000))


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    OUT.flush()


def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Ask the client and wait for the answer to this request (the client sends nothing
    else meanwhile: the agent's turn is the only thing in flight)."""
    request_id = next(_ids)
    send({"id": request_id, "method": method, "params": params})
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message  # type: ignore[no-any-return]
    sys.exit(0)


def say(session: str, text: str) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    send({"method": "session/update", "params": {"sessionId": session, "update": update}})


def serve(session: str, answer: Callable[[str, str], str]) -> None:
    """Answer the client until stdin ends; on a prompt, say ``answer(cwd, prompt text)``."""
    cwd = "."
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            capabilities = {"loadSession": False}
            send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": capabilities}})
        elif method == "session/new":
            cwd = message["params"]["cwd"]
            send({"id": rid, "result": {"sessionId": session}})
        elif method == "session/prompt":
            prompt = message["params"]["prompt"]
            text = "".join(part.get("text", "") for part in prompt).strip()
            say(session, answer(cwd, text))
            send({"id": rid, "result": {"stopReason": "end_turn"}})
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})
