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

from stdlib_rpc import call, serve  # a sibling: this agent runs as a script

CONFIG = json.loads(Path(os.environ["HOSTILE_CONFIG"]).read_text())
HOSTILE = Path(__file__).resolve().parent.parent / "sandbox" / "hostile.py"


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
    serve("hostile_1", lambda cwd, _prompt: act("hostile_1", cwd))


if __name__ == "__main__":
    main()
