"""The executable a command names, found as ``exec`` would find it for a child with a given
``PATH`` and working directory — before the child is started, so that a missing or
non-executable command is an ``OSError`` of the spawn (procgroup.py) and not an exit code of
a launcher (setpriv, bwrap, the Landlock shim).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def resolve_command(command: str, path: str, cwd: str | Path | None) -> str:
    """The executable ``command`` names, found as ``exec`` would find it for a child with
    this ``PATH`` and cwd. FileNotFoundError, IsADirectoryError or PermissionError."""
    base = os.fspath(cwd) if cwd is not None else os.getcwd()  # noqa: PTH109
    if "/" in command:
        candidates = [_joined(base, command)]
    else:
        candidates = [_joined(base, entry or ".", command) for entry in path.split(os.pathsep)]
    refused: OSError | None = None
    for candidate in candidates:
        try:
            info = os.stat(candidate)  # noqa: PTH116 (strings: a run resolves a dozen)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            refused = refused or IsADirectoryError(errno.EISDIR, "is a directory", str(candidate))
        elif not stat.S_ISREG(info.st_mode) or not os.access(candidate, os.X_OK):
            refused = refused or PermissionError(errno.EACCES, "not executable", str(candidate))
        else:
            return str(candidate)
    raise refused or FileNotFoundError(errno.ENOENT, "command not found", command)


def _plain(text: str) -> bool:
    """Whether ``str(Path(text)) == text``: absolute, no doubled slash, no ``.`` part, no
    trailing slash."""
    if text == "/":
        return True
    return (
        text.startswith("/")
        and "//" not in text
        and "/./" not in text
        and not text.endswith(("/", "/."))
    )


def _joined(*parts: str) -> str:
    """``str(Path(*parts))``, without a ``Path`` for the usual candidate (a plain absolute
    folder and a bare name; most of a ``PATH`` search finds nothing)."""
    *folders, name = parts
    last = folders[-1] if folders else ""
    if name.startswith("/") and _plain(name):
        return name
    if "/" not in name and name not in ("", ".", "..") and _plain(last):
        return f"{last}/{name}" if last != "/" else f"/{name}"
    return str(Path(*parts))
