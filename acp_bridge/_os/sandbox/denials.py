"""When a sandboxed agent fails, was it the sandbox? The paths its stderr (or its error) names
and the paths it was given, checked against the run's path plan.

Agents installed in unusual places fail inside a sandbox in their own words ("Cannot find
module '/tmp/x/node_modules/y'", "EROFS: read-only file system, open '/home/u/.cache/z'",
kimi's "storage write failed"), which say nothing about the sandbox. The note names the
path and the profile key that fixes it:

- a path the plan keeps read-only, named with a write error: ``sandbox.state``;
- a hidden path named with a write error: ``sandbox.state``; named otherwise (a read, or a
  "does not exist" that may be either): ``sandbox.readable`` to read it, ``sandbox.state``
  to write there;
- a folder the agent was *given* — an absolute path among its arguments (fast-agent's
  ``--home DIR``) or in a variable of its environment (``CODEX_HOME``, ``VIBE_HOME``) — that
  the plan keeps read-only or hides: agents keep their state where they are told, and their
  error often names the path in other words, or not at all. What the agent names inside
  such a folder is said of the folder (the fix is the folder, not the file it failed on);
- a write error that names no path the plan refuses: where the agent may write.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from acp_bridge._os.fs.paths import path_of, real_path
from acp_bridge._os.sandbox.plan import Access, PathPlan

_PATH = re.compile(r"(?<![\w.~-])(/[^\s'\"`:,;()<>\[\]{}]+)")
_WRITING = re.compile(
    r"read-only file system|EROFS|write failed|failed to write|cannot write|could not write"
    r"|unable to write",
    re.IGNORECASE,
)
"""Words that say a write failed, whatever the path: what makes a hidden path state."""
_WRITE_ERROR = re.compile(
    _WRITING.pattern + r"|EACCES|EPERM|permission denied|operation not permitted", re.IGNORECASE
)
"""Those, and a refusal: on a path the agent may read, a refusal was a write (a hidden path
is refused a read as well, under Landlock)."""
MAX_NOTES = 3
Given = tuple[str, str]
"""A path the agent was given, and how: ``("argument --home", "/x")``, ``("CODEX_HOME", …)``."""


def explain_denials(
    stderr: str, plan: PathPlan, given: Sequence[Given] = (), said: str = ""
) -> str:
    """A note naming the paths the agent's ``stderr`` (and ``said``, the error it answered)
    mentions, and the folders it was ``given``, that the sandbox hid or kept read-only, with
    the profile key that fixes each; empty when there is nothing to say."""
    hidden: list[str] = []  # named, reads or writes unknown
    hidden_writes: list[str] = []
    frozen: list[str] = []
    wrote = False
    for line in [*stderr.splitlines(), *said.splitlines()]:
        refused = _WRITE_ERROR.search(line) is not None
        writing = refused and _WRITING.search(line) is not None
        wrote = wrote or writing
        for raw in _PATH.findall(line):
            path = raw.rstrip(".'\"")
            if path in hidden or path in hidden_writes or path in frozen:
                continue
            if len(Path(path).parts) < 3:
                continue  # "/" and top folders: system paths an error names in passing
            access = plan.access_of(Path(path))
            if access is Access.HIDDEN:
                (hidden_writes if writing else hidden).append(path)
            elif access is Access.READ and refused:
                frozen.append(path)
    notes, folders = _given_notes(given, plan)

    def unsaid(paths: list[str]) -> list[str]:  # what a note on a given folder does not cover
        return [p for p in paths if not any(p == f or p.startswith(f + "/") for f in folders)]

    hidden, hidden_writes, frozen = unsaid(hidden), unsaid(hidden_writes), unsaid(frozen)
    if hidden_writes:
        notes.append(
            f"the agent's stderr names {_shown(hidden_writes)}, which the sandbox hides: if "
            "the agent must write there, list it under sandbox.state in the profile"
        )
    if hidden:
        notes.append(
            f"the agent's stderr names {_shown(hidden)}, which the sandbox hides: list it (or "
            "the folder holding it) under sandbox.readable in the profile if the agent reads "
            "it, under sandbox.state if it writes there"
        )
    if frozen:
        notes.append(
            f"the agent's stderr names {_shown(frozen)}, which the sandbox keeps read-only: "
            "if the agent must write there, list it under sandbox.state in the profile"
        )
    if wrote and not notes:
        writable = [str(r.path) for r in plan.rules if r.access is Access.WRITE]
        notes.append(
            "the agent failed to write and names no path the sandbox refuses: it may write "
            f"only {_shown(writable) or 'nothing'} and its private /tmp; list the folder it "
            "keeps its state in under sandbox.state in the profile"
        )
    return "; ".join(notes)


def _given_notes(given: Sequence[Given], plan: PathPlan) -> tuple[list[str], list[str]]:
    """A note for each folder the agent was given that the sandbox refuses (the first
    :data:`MAX_NOTES`), and those folders: what the agent names inside one is said by it,
    with how the folder was given — the fix is the folder, not a file in it."""
    notes: list[str] = []
    folders: list[str] = []
    for how, path in given[: MAX_NOTES * 4]:
        if path in folders or not _state_like(path):
            continue
        access = plan.access_of(path_of(real_path(path)))
        if access is Access.WRITE:
            continue
        folders.append(path)
        what = "hides" if access is Access.HIDDEN else "keeps read-only"
        notes.append(
            f"the agent was given {path} ({how}), which the sandbox {what}: if the agent "
            "keeps its state there, list it under sandbox.state in the profile"
        )
        if len(notes) == MAX_NOTES:
            break
    return notes, folders


def _state_like(path: str) -> bool:
    """A folder, or a name not made yet (an agent makes its state folder on first use):
    not a file such as the script the agent runs."""
    return os.path.isdir(path) or not os.path.lexists(path)  # noqa: PTH112 (strings)


def given_paths(args: Sequence[str], env: Sequence[tuple[str, str]]) -> list[Given]:
    """The absolute paths an agent is given: among its ``args`` (``--home /x``,
    ``--home=/x``, a bare ``/x``) and the values of ``env`` (the caller picks which: the
    profile's own variables and those passed through, not the base ones such as ``HOME``)."""
    found: list[Given] = []
    for index, arg in enumerate(args):
        if arg.startswith("-") and "=" in arg:
            flag, _, value = arg.partition("=")
        else:
            flag, value = "", arg
            if index and args[index - 1].startswith("-") and "=" not in args[index - 1]:
                flag = args[index - 1]
        if value.startswith("/"):
            found.append((f"argument {flag}" if flag else "an argument", os.path.normpath(value)))
    for name, value in env:
        if value.startswith("/") and os.pathsep not in value and "\n" not in value:
            found.append((name, os.path.normpath(value)))
    return found


def _shown(paths: Sequence[str]) -> str:
    return ", ".join(paths[:MAX_NOTES])
