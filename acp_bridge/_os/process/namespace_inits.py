"""Reaping what the kernel hands us: the PID-namespace inits bubblewrap leaves behind.

Why: ``bwrap --unshare-pid`` starts an init of its own in the new namespace and exits as
soon as that init reports the command's exit code — before reaping it. The init is then
reparented to the nearest *child subreaper*, else to PID 1. Normally that is the system's
init, which reaps it at once. But when the bridge is itself PID 1 (a container started
without ``--init``) or a subreaper, the inits come to the bridge, and nothing else would
reap them: one ``<defunct>`` entry per sandboxed process for as long as the bridge lives —
for an MCP server, for ever, until the PID limit is reached.

Which children are safe to reap: only inits of a PID namespace nested in ours (their
``NSpid`` in ``/proc/<pid>/status`` has more levels than ours). The bridge never creates a
PID namespace itself — it execs bwrap, which does — so none of them is a child it started
and waits for: reaping one of *those* would steal its exit status from its waiter.

Nothing is looked for unless the bridge is PID 1 or a subreaper (one ``prctl``): the scan
reads every thread's ``children`` file and every child's ``status``, which 64 runs ending at
once paid 64 times each, in worker threads holding the GIL the event loop needed.

Linux only; elsewhere (no ``/proc``) nothing is found.
"""

from __future__ import annotations

import functools
import os
import select
import sys
import time
from typing import Any

from acp_bridge._os.process import proc

PR_GET_CHILD_SUBREAPER = 37


def _namespace_inits() -> list[int]:
    """Our children that are the init of a PID namespace nested in ours (more ``NSpid``
    levels than ours)."""
    depth = len(proc.namespace_pids(os.getpid())) or 1
    return [pid for pid in proc.children() if len(proc.namespace_pids(pid)) > depth]


@functools.cache
def _libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def inherits_orphans() -> bool:
    """Whether orphaned descendants come to this process: it is PID 1 (of its namespace) or
    a child subreaper. True where that cannot be asked (then the scan decides)."""
    if os.getpid() == 1:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        flag = ctypes.c_int(0)
        refused = _libc().prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0
    except (OSError, AttributeError):  # no libc to load, or no prctl in it
        return True
    return refused or flag.value != 0


def reap_namespace_inits(wait: float = 0.2) -> int:
    """Reap every child that is a nested PID namespace's init, giving one that is still
    exiting up to ``wait`` seconds. How many were reaped (0 unless the bridge is PID 1 or a
    subreaper: otherwise they are never its children)."""
    if not inherits_orphans():
        return 0
    inits = _namespace_inits()
    deadline = time.monotonic() + wait
    reaped = 0
    for pid in inits:
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # reaped meanwhile, or no pidfds (kernel < 5.3)
            continue
        try:
            # A pidfd turns readable when the process exits: no busy wait for the last few.
            select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))
            if os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG) is not None:
                reaped += 1
        except ChildProcessError:  # someone else reaped it
            pass
        finally:
            os.close(pidfd)
    return reaped
