"""An ACP agent that attacks the repository of its worktree run (stdlib only). Usage:
``python repository_hostile_agent.py`` with ``HOSTILE_REPOSITORY`` in its environment: the
JSON config of ``tests/sandbox/hostile_repository.py``.

Its prompt names a case of that script. On it, the agent runs the script as its own child
(its in-process tool: the sandbox is all that holds it), then asks the client — the
bridge's file service, which serves outside any sandbox — to write into the caller's
``.git`` too, directly and through a link out of its worktree, and answers with the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

CONFIG = os.environ.get("HOSTILE_REPOSITORY", "{}")
SCRIPT = Path(__file__).resolve().parent.parent / "sandbox" / "hostile_repository.py"
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


def act(session: str, cwd: str, case: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), case, CONFIG],
        cwd=cwd, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    report = json.loads(lines[-1]) if lines else {"case": f"no report: {done.stderr[-300:]}"}
    caller_git = json.loads(CONFIG).get("caller_git", "/nonexistent")
    for path in (f"{caller_git}/config", f"{caller_git}/hooks/post-checkout",
                 f"{cwd}/escape/config"):  # fmt: skip
        written = call(
            "fs/write_text_file",
            {"sessionId": session, "path": path, "content": "[core]\n\tbare = true\n"},
        )
        report[f"client write {path}"] = "ok" if "result" in written else "refused"
    return json.dumps(report)


def main() -> None:
    cwd = "."
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            capabilities = {"loadSession": False}
            send({"id": rid, "result": {"protocolVersion": 1, "agentCapabilities": capabilities}})
        elif method == "session/new":
            cwd = message["params"]["cwd"]
            send({"id": rid, "result": {"sessionId": "repository_1"}})
        elif method == "session/prompt":
            prompt = message["params"]["prompt"]
            case = "".join(part.get("text", "") for part in prompt).strip()
            text = act("repository_1", cwd, case)
            update = {"sessionUpdate": "agent_message_chunk",
                      "content": {"type": "text", "text": text}}  # fmt: skip
            send({"method": "session/update",
                  "params": {"sessionId": "repository_1", "update": update}})  # fmt: skip
            send({"id": rid, "result": {"stopReason": "end_turn"}})
        elif rid is not None and method is not None:
            send({"id": rid, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
