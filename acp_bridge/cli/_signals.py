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

The commands that run many entries — ``smoke``, ``batch``, ``compare`` — keep the same
handler and run their loop through :meth:`Interrupts.run` too: the first signal cancels
the work gracefully (running cases or tasks cancelled, the rest not started), the second
stops waiting for it (what still runs is cancelled outright, what it started killed), and
the command then writes its reports for what ended and exits 130. A signal while their
reports are written is counted, never a KeyboardInterrupt that would leave them half
written. Before their loop starts nothing has run and nothing is owed, so there
(:attr:`Interrupts.abandon_before_loop`) the second signal ends the command at once.

Other commands that are not entry paths (``profiles``, ``tools``…) get the default
handlers back once the CLI's imports are done, so Ctrl-C stops them as before.
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
        self.abandon_before_loop = False
        """Set by a command with nothing owed before its loop: there the second signal
        raises KeyboardInterrupt (a suite or tasks file still loading ends at once)."""
        self._looped = False

    def install(self) -> None:
        for sig in SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):  # not the main thread, or no such signal here
                continue

    def restore(self) -> None:
        """The handlers from before :meth:`install` (for callers that run main() in-process)."""
        previous, self._previous = self._previous, {}
        self.abandon_before_loop = self._looped = False
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        wake = self._wake
        if wake is not None:
            wake()
        elif self.abandon_before_loop and not self._looped and self.count >= 2:
            raise KeyboardInterrupt

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
        self._looped = True
        try:
            deliver()
            return await job(cancel, abort)
        finally:
            self._wake = None


interrupts = Interrupts()
"""The process's one signal counter (the CLI is the only place that installs it)."""
