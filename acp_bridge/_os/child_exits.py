"""A child's exit seen through a pidfd on the running event loop, not by a thread per child.

Why: on Python 3.11, asyncio learns that a subprocess exited from its default
``ThreadedChildWatcher``, which starts one thread per child to sit in ``waitpid``. A fan-out
of 64 runs started 64 of them (and the bwrap probe's); each thread's start, its ``waitpid``
and the hand-back to the loop cost ~0.5 M instructions a run, some 4% of the bridge's own
work. Python 3.12 and later do what :class:`PidfdExits` does by themselves (asyncio's
``_PidfdChildWatcher``): the child's pidfd turns readable when it exits, a reader on the
loop that started it reaps it. Here the same is installed, once, on 3.11 only, and only in
place of asyncio's default watcher under asyncio's default policy: a watcher or policy the
application chose is left alone, and so is a kernel without pidfds (before 5.3).

Same behaviour otherwise: the exit status, a child reaped elsewhere reported as 255 with a
warning (as the threaded watcher does), the callback asyncio gave, called on the loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVarTuple

Ts = TypeVarTuple("Ts")

log = logging.getLogger("asyncio")

_installed = False
_lock = threading.Lock()


class PidfdExits(asyncio.AbstractChildWatcher):
    """Python 3.12's ``_PidfdChildWatcher``, for 3.11: any running loop, no threads."""

    def __init__(self) -> None:
        self._fallback = asyncio.ThreadedChildWatcher()

    def add_child_handler(
        self, pid: int, callback: Callable[[int, int, *Ts], object], *args: *Ts
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # should not happen for an unreaped child: the old way, then
            self._fallback.add_child_handler(pid, callback, *args)
            return
        loop._add_reader(pidfd, self._reap, pid, pidfd, callback, args)  # type: ignore[attr-defined]

    def _reap(
        self, pid: int, pidfd: int, callback: Callable[..., Any], args: tuple[Any, ...]
    ) -> None:
        loop = asyncio.get_running_loop()
        loop._remove_reader(pidfd)  # type: ignore[attr-defined]
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # reaped elsewhere: what the threaded watcher says too
            returncode = 255
            log.warning(
                "child process pid %d exit status already read: will report returncode 255", pid
            )
        else:
            returncode = os.waitstatus_to_exitcode(status)
        os.close(pidfd)
        callback(pid, returncode, *args)

    def remove_child_handler(self, pid: int) -> bool:
        return True  # asyncio never calls it (as the threaded watcher says)

    def attach_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        pass

    def close(self) -> None:
        pass

    def is_active(self) -> bool:
        return True

    def __enter__(self) -> PidfdExits:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass


def watch_exits_by_pidfd() -> None:
    """Install :class:`PidfdExits` where asyncio would otherwise start a thread per child
    (see the module docstring); a no-op after the first call, and everywhere else."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        _installed = True
        if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
            return
        policy = asyncio.get_event_loop_policy()
        if type(policy) is not asyncio.DefaultEventLoopPolicy:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            current = policy.get_child_watcher()
            if type(current) is not asyncio.ThreadedChildWatcher:
                return
            try:
                os.close(os.pidfd_open(os.getpid()))
            except OSError:  # a kernel without pidfds
                return
            policy.set_child_watcher(PidfdExits())
