"""An ACP agent that reports usage mid-turn, then waits to be cancelled (stdlib only).

Usage: ``python usage_agent.py``. Each prompt: one message chunk (``partial answer``), then a
``usage_update`` with 1234 context tokens and a cost of 0.5 USD, then it waits up to 30 s for
``session/cancel`` and ends the turn ``cancelled`` (or ``end_turn`` if nobody cancels). For the
budget tests: a run with a smaller budget must be cancelled mid-turn.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

SESSION = "usage_session_1"
cancelled = threading.Event()
lock = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with lock:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()


def update(kind: str, **fields: Any) -> None:
    send(
        {
            "method": "session/update",
            "params": {"sessionId": SESSION, "update": {"sessionUpdate": kind, **fields}},
        }
    )


def prompt(request_id: Any) -> None:
    update("agent_message_chunk", content={"type": "text", "text": "partial answer"})
    update("usage_update", used=1234, size=200000, cost={"amount": 0.5, "currency": "USD"})
    stop = "cancelled" if cancelled.wait(30) else "end_turn"
    send({"id": request_id, "result": {"stopReason": stop}})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "authMethods": [],
                "agentInfo": {"name": "usage-agent", "version": "0"},
            }
            send({"id": rid, "result": result})
        elif method == "session/new":
            send({"id": rid, "result": {"sessionId": SESSION}})
        elif method == "session/prompt":
            cancelled.clear()
            threading.Thread(target=prompt, args=(rid,), daemon=True).start()
        elif method == "session/cancel":
            cancelled.set()
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
