"""Work on a thread that the run's deadline and its cancel must still stop.

A thread cannot be cancelled: ``anyio.to_thread.run_sync`` either waits for it (then a
cancel scope, a deadline, Ctrl-C all wait too: a walk of 200 000 files, a read through a
terabyte of sparse file held the run past T + 5 s) or abandons it (then it runs on, unseen).
So every loop that can run long on a thread takes a :class:`StopToken` and looks at it as
it goes, and :func:`in_thread` abandons the thread when the caller is cancelled *and* tells
it to stop: the caller goes on at once, the thread ends at its next look.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeVar

import anyio

T = TypeVar("T")


class StopToken:
    """Whether a piece of work must stop: its deadline (``time.monotonic()``, the clock of
    ``anyio.current_time()``) passed, or its caller went away."""

    __slots__ = ("_cancelled", "deadline")

    def __init__(self, deadline: float = math.inf) -> None:
        self.deadline = deadline
        self._cancelled = False

    @classmethod
    def within(cls, seconds: float) -> StopToken:
        return cls(time.monotonic() + seconds)

    def cancel(self) -> None:
        self._cancelled = True

    @property
    def stopped(self) -> bool:
        return self._cancelled or time.monotonic() >= self.deadline


async def in_thread(work: Callable[[], T], token: StopToken) -> T:
    """``work()`` on a worker thread; when the caller is cancelled (a deadline, Ctrl-C) it
    returns at once and ``token`` tells the thread to stop."""
    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    finally:
        token.cancel()  # done or abandoned: either way nothing more is wanted of it
