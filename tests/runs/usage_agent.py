"""An ACP agent that reports usage mid-turn, then waits to be cancelled (stdlib only).

Usage: ``python usage_agent.py``. Each prompt: one message chunk (``partial answer``), then a
``usage_update`` with 1234 context tokens and a cost of 0.5 USD, then it waits up to 30 s for
``session/cancel`` and ends the turn ``cancelled`` (or ``end_turn`` if nobody cancels). For the
budget tests: a run with a smaller budget must be cancelled mid-turn.

A prompt ``spend STEP`` instead reports a cost growing by STEP every 20 ms, for ever, deaf to
``session/cancel`` (and to SIGTERM): only a kill ends it. For the overshoot tests: a run over
its budget must be stopped at once, not after its cancel's grace.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
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


def spend(step: float) -> None:
    cost = 0.0
    while True:
        cost += step
        update(
            "usage_update", used=int(cost), size=200000, cost={"amount": cost, "currency": "USD"}
        )
        time.sleep(0.02)


def prompt(request_id: Any, text: str) -> None:
    if text.startswith("spend "):
        spend(float(text.split()[1]))
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
            blocks = message["params"].get("prompt") or [{}]
            text = " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict))
            if text.strip().startswith("spend "):
                signal.signal(signal.SIGTERM, signal.SIG_IGN)  # deaf (in the main thread)
            threading.Thread(target=prompt, args=(rid, text.strip()), daemon=True).start()
        elif method == "session/cancel":
            cancelled.set()
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
