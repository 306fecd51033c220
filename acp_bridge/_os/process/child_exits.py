"""How the event loop learns that a child exited: its pidfd in the loop, not a thread per child.

Why: asyncio hears of a child's exit through the event loop policy's child watcher. Python
3.12 made the pidfd watcher the default on Linux: the loop watches each child's pidfd and
reaps it when it turns readable. 3.11's default, ``ThreadedChildWatcher``, starts one thread
per child that blocks in ``waitpid``: the loop waits for each thread to start, and each
thread takes the GIL from the loop to hand the exit back. In a fan-out of 64 sandboxed
agents that was 64 threads and their GIL handoffs: ~1.1 ms of the bridge's CPU a task
(8 pairs, benchmarks/README.md, round 8).

So on 3.11 the first start of a process (:func:`use_pidfds`) gives the policy the 3.12
behaviour, when the policy still has the default it would have chosen itself (a
``ThreadedChildWatcher``) and the kernel has pidfds (5.3; a seccomp filter may refuse
them). A watcher the host chose (any other kind) is left alone, and on 3.12 and later
nothing is done. Children already watched by the threaded watcher are still reaped by their
threads: replacing it only closes it, which stops nothing.

Not 3.11's own ``PidfdChildWatcher``: it serves only the loop it was attached to (the main
thread's), so a host running its loop in another thread could not start a process. Ours
takes each call's running loop, as 3.12's does. It never reaps a pid it was not given, so
processes started outside the loop (``subprocess.run``) keep their exit statuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVarTuple, Unpack

log = logging.getLogger("acp_bridge.processes")

_Args = TypeVarTuple("_Args")

EXIT_STATUS_LOST = 255
"""What asyncio reports for a child whose status someone else took (as its watchers do)."""


def _pidfds_work() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):  # no pidfd_open (kernel < 5.3), or a filter refuses it
        return False
    return True


if sys.version_info < (3, 12):

    class LoopPidfdWatcher(asyncio.AbstractChildWatcher):
        """Each child's pidfd in the running loop; reaped by pid when it turns readable."""

        def __enter__(self) -> LoopPidfdWatcher:
            return self

        def __exit__(self, *exc_info: object) -> None:
            return None

        def is_active(self) -> bool:
            return True  # it needs no loop attached: each call brings its own

        def close(self) -> None:
            return None

        def attach_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
            return None

        def add_child_handler(
            self,
            pid: int,
            callback: Callable[[int, int, Unpack[_Args]], object],
            *args: *_Args,
        ) -> None:
            loop = asyncio.get_running_loop()
            pidfd = os.pidfd_open(pid)
            loop.add_reader(pidfd, _reap, loop, pid, pidfd, callback, args)

        def remove_child_handler(self, pid: int) -> bool:
            return True  # asyncio never calls it (nor does 3.12's watcher do anything)

    def _reap(
        loop: asyncio.AbstractEventLoop,
        pid: int,
        pidfd: int,
        callback: Callable[..., object],
        args: tuple[Any, ...],
    ) -> None:
        loop.remove_reader(pidfd)
        try:
            _, status = os.waitpid(pid, 0)  # exited: readable pidfd, so this does not block
        except ChildProcessError:  # someone else reaped it
            log.warning("child process %d: its exit status was taken elsewhere", pid)
            returncode = EXIT_STATUS_LOST
        else:
            returncode = os.waitstatus_to_exitcode(status)
        finally:
            os.close(pidfd)
        callback(pid, returncode, *args)

    @functools.cache
    def use_pidfds() -> bool:
        """Give asyncio's policy the pidfd watcher if it has its default threaded one (once
        per process). Whether the policy's watcher is ours now."""
        if not sys.platform.startswith("linux") or not _pidfds_work():
            return False
        policy = asyncio.get_event_loop_policy()
        # A policy without child watchers (uvloop's: its loop watches children itself).
        with contextlib.suppress(NotImplementedError, AttributeError):
            if type(policy.get_child_watcher()) is asyncio.ThreadedChildWatcher:
                policy.set_child_watcher(LoopPidfdWatcher())
                return True
        return False

else:

    def use_pidfds() -> bool:
        """3.12 and later: asyncio's default watcher uses pidfds already."""
        return False
