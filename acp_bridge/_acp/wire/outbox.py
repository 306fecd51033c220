"""The one way bytes reach the agent's stdin: a queue bounded in bytes, written in order by
one task, every write under the current phase deadline.

Why a queue and not a lock around ``send``: a reply to the agent's request must not hold a
handler while the agent is busy writing (a single-threaded agent that floods requests reads
its replies only afterwards; a handler blocked on its reply would stop the reader, and the
reader stopped would block the agent: a deadlock). Queued, a reply costs its bytes until the
agent reads again — up to :data:`MAX_QUEUED_BYTES`, after which senders wait: back-pressure.

A sender that waits holds its message too, and so does a handler building a reply: 100
replies of 4 MiB an agent did not read yet peaked at 417 MB with 8 MiB queued (32 handlers
each holding one, with the file and the JSON it was made from). So the bytes of waiting
senders are counted, and a handler whose reply may be large (a file's text, a terminal's
output) first takes :data:`REPLY_ROOM` of the same budget (:meth:`reply_room`): the whole
of it, so such replies are built one at a time, and only once what was queued before is
written; the others wait before they read anything. Replies that are small (a permission,
an exit status) are never held up: a blocking ``terminal/wait_for_exit`` still does not
stall the rest.

Why one writer: a message is written whole or the stream is unusable. When a write does not
finish by the deadline (the agent stopped reading its stdin), the outbox is *stalled*: that
message and every queued one are dropped, each noted in the transcript as not sent, and
every later :meth:`put` fails at once with the same :class:`~acp_bridge.errors.RunTimeout`.
Nothing waits behind a blocked write: ``session/cancel`` asks :meth:`put` with a short
``written_within`` and, when it is not out by then, the run goes straight to the kill.

The transcript records a message when it was written, not when it was queued.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import ByteSendStream

from acp_bridge._acp.wire.transcript import Transcript
from acp_bridge.errors import AgentExitedError, BridgeError, RunTimeout

MAX_QUEUED_BYTES = 8 << 20
"""Bytes waiting for the agent to read them before senders have to wait."""
MESSAGE_OVERHEAD = 256
"""What a queued message costs besides its bytes (the :class:`Outgoing`, its label, the
bytes object's header, the queue's slot): counted too, so 100 000 replies of 40 bytes an
agent never reads are 29 MB held, and senders wait long before that."""
REPLY_ROOM = MAX_QUEUED_BYTES
"""What a handler whose reply may be large holds of the budget while it builds it: all of
it (half let two be built at once: 100 replies of 4 MiB peaked at 2.2x an idle run)."""
NOTED_DROPS = 8
"""Messages dropped at a stall that get a note each in the transcript (then one for the rest)."""
BATCH_BYTES = 64 << 10
"""Queued messages are written together up to this many bytes: one send, one flush."""


class Outgoing:
    """One message on its way; ``written`` (made only for a sender that waits for it) is
    set once it is out or dropped. A flood of replies costs their bytes, little more."""

    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("data", "deadline", "label", "request_id", "sent", "written")

    def __init__(
        self,
        data: bytes,
        label: str,
        request_id: int | None = None,
        written: anyio.Event | None = None,
        sent: bool = False,
        deadline: float | None = None,
    ) -> None:
        self.data = data
        self.label = label
        self.request_id = request_id
        self.written = written
        self.sent = sent
        # Its own write deadline, for clean-up sent after the phase's has passed (a cancel).
        self.deadline = deadline

    def done(self) -> None:
        if self.written is not None:
            self.written.set()


class Outbox:
    """The agent's stdin as a bounded, ordered queue with one writer (:meth:`run`)."""

    def __init__(
        self,
        send: ByteSendStream,
        transcript: Transcript | None = None,
        *,
        max_bytes: int = MAX_QUEUED_BYTES,
        on_drop: Callable[[Outgoing, BridgeError], None] | None = None,
    ) -> None:
        self._send = send
        self._on_drop = on_drop
        self._transcript = transcript
        self._max_bytes = max_bytes
        self._queue: deque[Outgoing] = deque()
        self._queued_bytes = 0
        self._held_bytes = 0
        """Bytes of senders waiting for room and of the room handlers took (reply_room)."""
        self._wake = anyio.Event()
        self._room = anyio.Event()
        self._writing: anyio.CancelScope | None = None
        self.deadline = math.inf
        """Absolute time (``anyio.current_time()``) by which each write must be done."""
        self.failure: BridgeError | None = None
        """Why nothing more can be written (stalled, or the agent closed its stdin)."""

    def set_deadline(self, deadline: float) -> None:
        """The current phase's deadline: it applies to the write in progress too."""
        self.deadline = deadline
        if self._writing is not None:
            self._writing.deadline = deadline

    async def put(
        self,
        data: bytes,
        label: str,
        *,
        written_within: float | None = None,
        request_id: int | None = None,
        deadline: float | None = None,
    ) -> bool:
        """Queue one message (waiting for room, under the caller's own deadline). With
        ``written_within``, also wait that long for it to be written; whether it was.
        A message that will never be written is handed to ``on_drop``."""
        message = Outgoing(data, label, request_id, deadline=deadline)
        if written_within is not None:
            message.written = anyio.Event()
        cost = len(data) + MESSAGE_OVERHEAD
        if self._queue and self._queued_bytes + cost > self._max_bytes:
            self._held_bytes += cost  # waiting, it is held all the same
            try:
                while self._queue and self._queued_bytes + cost > self._max_bytes:
                    self._check()
                    await self._wait_room()
            finally:
                self._held_bytes -= cost
        self._check()
        self._queue.append(message)
        self._queued_bytes += cost
        self._wake.set()
        if written_within is None:
            return False
        assert message.written is not None
        with anyio.move_on_after(written_within):
            await message.written.wait()
        return message.sent

    @asynccontextmanager
    async def reply_room(self, large: bool) -> AsyncIterator[None]:
        """Around building and queueing a reply: when it may be ``large``, wait until
        :data:`REPLY_ROOM` more fits in the budget with what is queued and held (or nothing
        is), and hold it until the reply is queued. Raises the outbox's failure."""
        if not large:
            yield
            return
        while (held := self._queued_bytes + self._held_bytes) and (
            held + REPLY_ROOM > self._max_bytes
        ):
            self._check()
            await self._wait_room()
        self._check()
        self._held_bytes += REPLY_ROOM
        try:
            yield
        finally:
            self._held_bytes -= REPLY_ROOM
            self._room.set()

    async def _wait_room(self) -> None:
        self._room = self._room if not self._room.is_set() else anyio.Event()
        await self._room.wait()

    async def drain(self) -> None:
        """Until everything queued now is written, or can no longer be (a closed stdin, a
        stall). The caller bounds the wait (its cancel scope)."""
        while self._queue and self.failure is None:
            self._room = self._room if not self._room.is_set() else anyio.Event()
            await self._room.wait()

    def _check(self) -> None:
        if self.failure is not None:
            raise self.failure

    @property
    def busy(self) -> bool:
        """Whether something is waiting to be written (or being written)."""
        return bool(self._queue)

    async def run(self) -> None:
        """The writer: until cancelled (the connection's end) or stalled."""
        try:
            while True:
                if not self._queue:
                    self._wake = anyio.Event()
                    await self._wake.wait()
                    continue
                batch = self._batch()
                if not await self._write(batch):
                    return
                for message in batch:
                    self._queue.popleft()
                    self._queued_bytes -= len(message.data) + MESSAGE_OVERHEAD
                    message.done()
                self._room.set()
        finally:
            self._drop_all(self.failure or AgentExitedError("the connection closed"))
            # Nothing is dropped after the writer: let go of the callback (a bound method
            # of the connection, which holds this outbox: a reference cycle otherwise).
            self._on_drop = None

    def _batch(self) -> list[Outgoing]:
        """The messages at the front of the queue, up to BATCH_BYTES (at least one)."""
        batch: list[Outgoing] = []
        size = 0
        for message in self._queue:
            if batch and size + len(message.data) > BATCH_BYTES:
                break
            batch.append(message)
            size += len(message.data) + 1
        return batch

    async def _write(self, batch: list[Outgoing]) -> bool:
        data = b"".join(message.data + b"\n" for message in batch)
        own = [message.deadline for message in batch if message.deadline is not None]
        with anyio.CancelScope(deadline=max([self.deadline, *own])) as scope:
            self._writing = scope
            try:
                await self._send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self.failure = AgentExitedError("the agent closed its stdin")
                return False
            finally:
                self._writing = None
        if scope.cancelled_caught:
            first = batch[0]
            self.failure = RunTimeout(
                f"the agent stopped reading its stdin: {first.label} "
                f"({len(first.data)} bytes) could not be written before the deadline"
            )
            return False
        for message in batch:
            message.sent = True
            if self._transcript is not None:
                self._transcript.outgoing(message.data, flush=False)
        if self._transcript is not None:
            self._transcript.flush()  # once per batch: a killed bridge still leaves it
        return True

    def _drop_all(self, why: BridgeError) -> None:
        """Everything still queued is not going to be written: say so, wake its waiters."""
        self.failure = failure = self.failure or why
        for index, message in enumerate(self._queue):
            if self._transcript is not None and index < NOTED_DROPS:
                self._transcript.note(
                    f"not sent: {message.label} ({len(message.data)} bytes): {failure}"
                )
            message.done()
            if self._on_drop is not None:
                self._on_drop(message, failure)
        if self._transcript is not None and len(self._queue) > NOTED_DROPS:
            more = len(self._queue) - NOTED_DROPS
            self._transcript.note(f"not sent either: {more} more queued message(s)")
        self._queue.clear()
        self._queued_bytes = 0
        self._room.set()
