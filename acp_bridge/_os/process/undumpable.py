"""The bridge's own process, kept out of reach of the processes it starts.

An agent runs as the same user as the bridge, so by default it may read
``/proc/<bridge pid>/environ`` — the bridge's whole environment, host secrets included,
which the constructed environment (environment.py) was meant to keep from it — and attach a
debugger to the bridge. ``prctl(PR_SET_DUMPABLE, 0)`` closes both: the kernel then lets only
root look into the bridge's ``/proc`` entries (``environ``, ``mem``, ``fd``…) or ptrace it.
It also means no core dumps of the bridge. Children are unaffected: ``execve`` makes every
program it starts dumpable again, so the leftover scan (marked_processes.py) still reads them.

Linux only; elsewhere, or where prctl is refused, nothing changes (docs/explanation/
security.md says what remains readable: ``/proc/<pid>/cmdline`` and ``status`` stay open).
"""

from __future__ import annotations

import sys

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
_done: bool | None = None


def make_undumpable() -> bool:
    """Make this process non-dumpable (once); whether it is now."""
    global _done
    if _done is None:
        _done = _prctl_undumpable()
    return _done


def _prctl_undumpable() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            return False
        return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # no libc to load, or no prctl in it
        return False
