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

from stdlib_rpc import call, serve  # a sibling: this agent runs as a script

CONFIG = os.environ.get("HOSTILE_REPOSITORY", "{}")
SCRIPT = Path(__file__).resolve().parent.parent / "sandbox" / "hostile_repository.py"


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
    serve("repository_1", lambda cwd, case: act("repository_1", cwd, case))


if __name__ == "__main__":
    main()
