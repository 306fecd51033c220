"""How many attempts of a batch are in Ray at once: the cluster's slots and a little more.

Why not submit every task at once: a batch of thousands then sits in Ray's own queue, and a
task whose node was lost, due a retry, queues behind all of them (a chaos run of 1 000 tasks
had its retries wait ~400 s), while Ray's scheduler works through a queue that every lost
raylet throws part of away. So attempts wait here, on the submitting side, in order, and
enter Ray only while fewer than the live nodes' slots plus :func:`margin` are in it: enough
for every slot to take its next task the moment it frees, no more. A retry waits at the
front. The size follows the nodes (:meth:`Window.resize`): a node that joins lets waiting
attempts in at once, one that is lost shrinks it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import anyio

from acp_bridge._batch.ray.placement import SLOT, NodeView

MIN_WINDOW = 2
"""Attempts let in even when no live node offers a slot: they are refused in Ray's queue
(no node can take them) instead of waiting here for ever."""


def margin(slots: int) -> int:
    """Attempts queued in Ray beyond its slots, so a freed slot never waits on us."""
    return max(2, slots // 4)


def window_size(nodes: Iterable[NodeView]) -> int:
    """The window for ``nodes``: their slots (live ones) plus the margin."""
    slots = int(sum(node.resources.get(SLOT, 0) for node in nodes if node.alive))
    return max(MIN_WINDOW, slots + margin(slots))


class _Seat:
    __slots__ = ("admitted", "event", "gone")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.admitted = False
        self.gone = False  # its waiter was cancelled: skipped (not searched for and removed)


class Window:
    """At most :attr:`size` attempts inside; the others wait in order, retries first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.inside = 0
        self._waiting: deque[_Seat] = deque()

    def resize(self, size: int) -> None:
        self.size = size
        self._admit()

    async def enter(self, *, first: bool = False) -> None:
        """Wait for a place (``first``: ahead of every waiting attempt, a retry's)."""
        if self.inside < self.size and not self._waiting:
            self.inside += 1
            return
        seat = _Seat()
        if first:
            self._waiting.appendleft(seat)
        else:
            self._waiting.append(seat)
        try:
            await seat.event.wait()
        except BaseException:
            seat.gone = True
            if seat.admitted:  # let in just as it was cancelled: the place goes on
                self.leave()
            raise

    def leave(self) -> None:
        self.inside -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiting and self.inside < self.size:
            seat = self._waiting.popleft()
            if seat.gone:
                continue
            seat.admitted = True
            self.inside += 1
            seat.event.set()
