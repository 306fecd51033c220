"""Whether the agent shows progress: the stall timeout and the drain after a turn.

Progress is an update or a request from the agent, or a request of its still being served
(a ``terminal/wait_for_exit`` on a ten-minute build is the agent working, not stalled). The
connection calls :meth:`Activity.touch` for each; waiting is event-driven (no polling), and
costs the hot path one attribute test per update.
"""

from __future__ import annotations

import anyio


class Activity:
    """Progress of one connection's agent."""

    __slots__ = ("_event", "count", "serving")

    def __init__(self) -> None:
        self.count = 0
        """Updates and requests seen."""
        self.serving = 0
        """The agent's requests being answered now."""
        self._event: anyio.Event | None = None

    def touch(self, seen: int = 1) -> None:
        self.count += seen
        if self._event is not None:
            self._event.set()

    async def quiet_for(self, seconds: float) -> bool:
        """Wait up to ``seconds``; whether nothing happened meanwhile and no request of the
        agent's is being served at the end."""
        if self._event is None or self._event.is_set():
            self._event = anyio.Event()
        event = self._event
        with anyio.move_on_after(seconds):
            await event.wait()
        return not event.is_set() and not self.serving

    async def until_stalled(self, seconds: float) -> None:
        """Return once ``seconds`` pass with no progress (a watchdog: run it beside a turn)."""
        while not await self.quiet_for(seconds):
            pass

    async def drain(self, quiet: float, most: float) -> int:
        """After a turn: wait while updates keep coming (each within ``quiet`` of the last),
        at most ``most`` seconds in all. How many came meanwhile."""
        before = self.count
        with anyio.move_on_after(most):
            while not await self.quiet_for(quiet):
                pass
        return self.count - before
