"""An ACP agent that acts on its own, as real agents do with their in-process tools (stdlib
only). Usage: ``python hostile_agent.py`` with ``HOSTILE_CONFIG`` in its environment: the path of a
JSON file (not the JSON itself: it names the host secret to look for, which must not be in
any process's environment but the bridge's).

On its prompt it runs ``tests/sandbox/hostile.py`` as its own child — writes, deletes,
lists and reads outside its roots, reads ``/proc`` for the bridge's environment, starts a
``setsid`` daemon and an ``env -i`` daemon that ignore SIGTERM and 100 children — then asks
the client for one terminal (``echo x > via-terminal.txt``) and answers with the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CONFIG = json.loads(Path(os.environ["HOSTILE_CONFIG"]).read_text())
HOSTILE = Path(__file__).resolve().parent.parent / "sandbox" / "hostile.py"
OUT = sys.stdout.buffer
_ids = iter(range(1000, 10_000))


def send(message: dict[str, Any]) -> None:
    OUT.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    OUT.flush()


def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
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


def act(session: str, cwd: str) -> str:
    # The agent's own tool: a child process, not a request to the client. Its daemons keep
    # any pipe open, so it reports through a file (the run waits for its exit, not an EOF).
    subprocess.run(
        [sys.executable, str(HOSTILE), CONFIG["marker"], json.dumps(CONFIG)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
        check=True,
    )
    report = json.loads(Path(CONFIG["report"]).read_text())
    (Path(cwd) / "in-process.txt").write_text("written by the agent itself\n")
    created = call(
        "terminal/create",
        {"sessionId": session, "command": "echo x > via-terminal.txt", "cwd": cwd},
    )
    terminal = created.get("result", {}).get("terminalId")
    if terminal:
        call("terminal/wait_for_exit", {"sessionId": session, "terminalId": terminal})
    report["terminal"] = "ok" if terminal else created.get("error")
    return json.dumps(report)


def main() -> None:
    cwd = "."
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        elif method == "session/new":
            cwd = message["params"]["cwd"]
            send({"id": rid, "result": {"sessionId": "hostile_1"}})
        elif method == "session/prompt":
            say("hostile_1", act("hostile_1", cwd))
            send({"id": rid, "result": {"stopReason": "end_turn"}})
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
