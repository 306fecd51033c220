"""An operating system error in plain words, as an agent, a log line or ``meta`` is told it.

Why one place: a failure on the path from an agent's request to the file system (a component
the user may not search, such as ``/proc/1/root``; a symlink loop; a name too long; a
directory where a file was asked for; an I/O error) must reach the agent as a clean refusal
and the envelope as a record — never as a Python ``repr``, a traceback, or an errno number
alone. Python raises such failures in three shapes: ``OSError`` (with its ``errno``),
``RuntimeError`` (pathlib's symlink loop before 3.13) and ``ValueError`` (a NUL in a path).
"""

from __future__ import annotations

import errno
import os

OS_FAILURES = (OSError, RuntimeError, ValueError)
"""What resolving or opening a path may raise, besides the library's own errors."""


def errno_name(exc: BaseException) -> str | None:
    """``EACCES``, ``ELOOP``, … for an OS failure; None when it names no errno."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    if isinstance(exc, RuntimeError) and "loop" in str(exc).lower():
        return "ELOOP"
    return None


def os_reason(exc: BaseException) -> str:
    """``Permission denied (EACCES)``, ``Too many levels of symbolic links (ELOOP)``, …:
    what went wrong, with the errno's name; the path is the caller's to add."""
    name = errno_name(exc)
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{exc.strerror or os.strerror(exc.errno)} ({name})"
    if name == "ELOOP":
        return f"{os.strerror(errno.ELOOP)} (ELOOP)"
    if isinstance(exc, ValueError) and "null" in str(exc).lower():
        return "the path contains a NUL byte"
    return type(exc).__name__
