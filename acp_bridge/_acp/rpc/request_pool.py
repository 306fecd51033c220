"""Agent→client requests, answered concurrently but boundedly: at most :data:`WORKERS` at
once, at most :data:`BACKLOG` waiting, and at most :data:`MAX_BYTES` of request lines held
(waiting or being answered); past that the reader waits (back-pressure).

Why bytes as well as a count: 1024 waiting requests of a few bytes cost little, 1024 writes
of 30 MB each cost 30 GB. A request bigger than the whole budget is still taken when nothing
else is held (else it would wait forever).

Why not one task per request: an agent can send requests faster than they are answered
(20 000 in a burst took one task each, 130 MB, and starved the reader so that an answer
sent in time was read too late). Why concurrency at all: a blocking
``terminal/wait_for_exit`` must not stall a ``fs/read_text_file`` (docs/explanation/acp.md,
tolerance).

Workers are started on demand and end when the backlog is empty, so an idle connection
holds no task. No handler waits for the reader (none sends a request to the agent), so a
reader waiting for room can always make progress once handlers finish — and every handler
is bounded by the run's deadlines.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Generic, Self, TypeVar

import anyio
from anyio.abc import TaskGroup

WORKERS = 32
BACKLOG = 1024
MAX_BYTES = 32 << 20

T = TypeVar("T")


class RequestPool(Generic[T]):
    """Feeds items to ``handle`` with at most ``workers`` running and ``backlog`` queued."""

    def __init__(
        self,
        tg: TaskGroup,
        handle: Callable[[T], Awaitable[None]],
        *,
        workers: int = WORKERS,
        backlog: int = BACKLOG,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._tg = tg
        self._handle = handle
        self._workers = workers
        self._max_bytes = max_bytes
        self._send, self._receive = anyio.create_memory_object_stream[tuple[T, int]](backlog)
        self._held = 0
        """Bytes of the requests waiting or being answered."""
        self._room = anyio.Event()
        self.active = 0
        self.peak_queued = 0

    def _fits(self, size: int) -> bool:
        return not self._held or self._held + size <= self._max_bytes

    def offer(self, item: T, size: int = 0) -> bool:
        """Queue ``item`` (``size``: the bytes it holds) if there is room now (the reader's
        fast path)."""
        if not self._fits(size):
            return False
        try:
            self._send.send_nowait((item, size))
        except anyio.WouldBlock:
            return False
        self._started(size)
        return True

    async def put(self, item: T, size: int = 0) -> None:
        """Queue ``item``, waiting for room: the back-pressure on the agent."""
        while not self._fits(size):
            self._room = self._room if not self._room.is_set() else anyio.Event()
            await self._room.wait()
        await self._send.send((item, size))
        self._started(size)

    def _started(self, size: int) -> None:
        self._held += size
        queued = self._receive.statistics().current_buffer_used
        self.peak_queued = max(self.peak_queued, queued)
        if self.active < self._workers and queued:
            self.active += 1
            self._tg.start_soon(self._work)

    async def _work(self) -> None:
        try:
            while True:
                try:
                    item, size = self._receive.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    return
                try:
                    await self._handle(item)
                finally:
                    self._held -= size
                    self._room.set()
        finally:
            self.active -= 1

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._send.close()
        self._receive.close()
