"""A minimal ACP agent (raw JSON-RPC on stdio) that, on each prompt, asks the client for a
terminal running the command given on its own command line (an ``acp-bridge`` started from
inside a subtask), waits for it, and answers with the terminal's output.

    python nested_bridge_agent.py -- COMMAND [ARG ...]
"""

from __future__ import annotations

import json
import sys
from typing import Any

COMMAND = sys.argv[sys.argv.index("--") + 1 :]
_next_id = 100


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def request(method: str, params: dict[str, Any]) -> Any:
    """Send a request to the client and wait for its result (nothing else is pending)."""
    global _next_id
    _next_id += 1
    send({"id": _next_id, "method": method, "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == _next_id and "method" not in message:
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            return message["result"]
    raise SystemExit("client went away")


def prompt(session_id: str) -> str:
    created = request(
        "terminal/create",
        {"sessionId": session_id, "command": COMMAND[0], "args": COMMAND[1:]},
    )
    terminal = {"sessionId": session_id, "terminalId": created["terminalId"]}
    request("terminal/wait_for_exit", terminal)
    output = request("terminal/output", terminal)["output"]
    request("terminal/release", terminal)
    return str(output)


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, params = message.get("method"), message.get("params", {})
        if method == "initialize":
            result: Any = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        elif method == "session/new":
            result = {"sessionId": "sess_nested"}
        elif method == "session/prompt":
            text = prompt(params["sessionId"])
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            }
            send(
                {
                    "method": "session/update",
                    "params": {"sessionId": params["sessionId"], "update": update},
                }
            )
            result = {"stopReason": "end_turn"}
        elif "id" in message:
            send({"id": message["id"], "error": {"code": -32601, "message": f"no {method}"}})
            continue
        else:
            continue
        send({"id": message["id"], "result": result})


if __name__ == "__main__":
    main()
