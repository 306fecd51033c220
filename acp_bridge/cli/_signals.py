"""Ctrl-C (SIGINT), SIGTERM and SIGHUP for the whole life of an entry command: the first
cancels the run gracefully, the second hurries it (no grace periods, SIGKILL to what it
started), and none of them is ever a KeyboardInterrupt traceback — not during imports,
config loading, start-up, the turn, shutdown, or while the envelope is printed. Every
entry command ends with one full envelope (task id, entry, agent, duration, partial output)
and exit code 130 when it was interrupted.

Why not ``anyio.open_signal_receiver``: it exists only inside the event loop, and asyncio
puts the default handlers back when it leaves (SIGINT raises KeyboardInterrupt again,
SIGTERM kills the process): a signal just before or just after the loop had no envelope.
Here one handler is installed first thing in ``main()`` and stays until it returns. Inside
the loop it wakes the loop with ``call_soon_threadsafe`` (safe in a signal handler: asyncio's
own signal handling does the same); signals that came before the loop are delivered as soon
as it runs. The handler itself only counts: printing from a signal handler can interrupt a
print in progress.

Commands that are not entry paths (``profiles``, ``tools``, ``smoke``…) get the default
handlers back once the CLI's imports are done, so Ctrl-C stops them as before (``smoke``
has its own graceful cancel inside its loop).
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported in run(): wait, ps and logs start without anyio
    import anyio

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
T = TypeVar("T")


class Interrupts:
    """Counts the interrupting signals of this process, from :meth:`install` on."""

    def __init__(self) -> None:
        self.count = 0
        self._wake: Callable[[], None] | None = None
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        for sig in SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):  # not the main thread, or no such signal here
                continue

    def restore(self) -> None:
        """The handlers from before :meth:`install` (for callers that run main() in-process)."""
        previous, self._previous = self._previous, {}
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        wake = self._wake
        if wake is not None:
            wake()

    async def run(
        self,
        job: Callable[[anyio.Event, anyio.Event], Awaitable[T]],
        say: Callable[[str], None],
    ) -> T:
        """``job(cancel, abort)``: the first signal sets ``cancel``, the second ``abort``;
        signals that came before the loop count too. Returns what ``job`` returns."""
        import asyncio

        import anyio

        cancel, abort = anyio.Event(), anyio.Event()
        loop = asyncio.get_running_loop()
        seen = 0

        def deliver() -> None:
            nonlocal seen
            while seen < self.count:
                seen += 1
                if seen == 1:
                    say("\ninterrupted: cancelling the run (again to end it now)")
                    cancel.set()
                elif seen == 2:
                    say("\ninterrupted again: ending the run now")
                    abort.set()

        def wake() -> None:
            loop.call_soon_threadsafe(deliver)

        self._wake = wake
        try:
            deliver()
            return await job(cancel, abort)
        finally:
            self._wake = None


interrupts = Interrupts()
"""The process's one signal counter (the CLI is the only place that installs it)."""
