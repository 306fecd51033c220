"""When a sandboxed agent fails, was it the sandbox? Paths its stderr names, checked against
the run's path plan.

Agents installed in unusual places fail inside a sandbox in their own words ("Cannot find
module '/tmp/x/node_modules/y'", "EROFS: read-only file system, open '/home/u/.cache/z'"),
which say nothing about the sandbox. A path such a message names that the plan hides means
``sandbox.readable``; one it keeps read-only, named with a write error, means
``sandbox.state``. The note says which path and which profile key.
"""

from __future__ import annotations

import re
from pathlib import Path

from acp_bridge._os.sandbox.plan import Access, PathPlan

_PATH = re.compile(r"(?<![\w.~-])(/[^\s'\"`:,;()<>\[\]{}]+)")
_WRITE_ERROR = re.compile(
    r"read-only file system|EROFS|EACCES|EPERM|permission denied|operation not permitted",
    re.IGNORECASE,
)
MAX_NOTES = 3


def explain_denials(stderr: str, plan: PathPlan) -> str:
    """A note naming the paths the agent's ``stderr`` mentions that the sandbox hid or kept
    read-only, with the profile key that fixes each; empty when none."""
    hidden: list[str] = []
    frozen: list[str] = []
    for line in stderr.splitlines():
        for raw in _PATH.findall(line):
            path = raw.rstrip(".'\"")
            if path in hidden or path in frozen or len(Path(path).parts) < 3:
                continue  # "/" and top folders: system paths an error names in passing
            access = plan.access_of(Path(path))
            if access is Access.HIDDEN:
                hidden.append(path)
            elif access is Access.READ and _WRITE_ERROR.search(line):
                frozen.append(path)
    notes = []
    if hidden:
        shown = ", ".join(hidden[:MAX_NOTES])
        notes.append(
            f"the agent's stderr names {shown}, which the sandbox hides: if the agent needs "
            f"it, list it (or the folder holding it) under sandbox.readable in the profile"
        )
    if frozen:
        shown = ", ".join(frozen[:MAX_NOTES])
        notes.append(
            f"the agent's stderr names {shown}, which the sandbox keeps read-only: if the "
            f"agent must write there, list it under sandbox.state in the profile"
        )
    return "; ".join(notes)
