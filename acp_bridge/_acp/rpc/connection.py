"""Newline-delimited JSON-RPC 2.0 over a pair of byte streams
(docs/explanation/acp.md, tolerance).

- Framing: lines of any length up to ``max_message_bytes`` (a hard ceiling: past it the
  connection fails with ProtocolError instead of the process running out of memory). A
  line that is not JSON (a log line on stdout) is skipped as it streams, whatever its
  length: past :data:`.line_framing.NOISE_PROBE` bytes only its head is kept, for the
  sample (line_framing.py).
- Everything the agent writes goes through the one parse boundary (``_acp/wire/inbound.py``) before
  anything here looks at it: what does not fit is skipped and counted in :attr:`stats`.
- Our requests get integer ids; replies are matched by id (a reply to an id we never used,
  or to one already answered, is counted and ignored). The agent's own request ids may be
  integers or strings and overlap ours: a message is classified by its keys, never its id.
- Agent→client requests are answered by the :class:`Router` (router.py), concurrently but
  boundedly (request_pool.py): a flood slows the agent down instead of growing tasks.
- Everything we write goes through the :class:`Outbox` (``_acp/wire/outbox.py``): one writer, a
  queue bounded in bytes, each write under the current phase deadline (:meth:`set_deadline`).
- ``session/update`` notifications bypass the router: they go straight to a synchronous
  callback. They are the hot path (100 000s per second).
- ``$/cancel_request`` works both ways. The agent's cancels the handler of that request
  (queued or running), answered -32800 (a reply is still owed). Ours is sent when we stop
  waiting for one of our requests (a deadline, a cancelled caller); an agent that does not
  know it ignores it. ``session/prompt`` has its own cancel (``session/cancel``).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from acp_bridge._acp.rpc.activity import Activity
from acp_bridge._acp.rpc.line_framing import read_lines
from acp_bridge._acp.rpc.pending import PendingRequest, Response, id_key
from acp_bridge._acp.rpc.request_pool import RequestPool
from acp_bridge._acp.rpc.router import Router, error_reply
from acp_bridge._acp.wire.inbound import InboundStats, decode_line
from acp_bridge._acp.wire.jsonrpc_messages import (
    NotificationMessage,
    ReplyMessage,
    RequestMessage,
    Skipped,
)
from acp_bridge._acp.wire.outbox import Outbox, Outgoing
from acp_bridge._acp.wire.schema import INVALID_REQUEST, REQUEST_CANCELLED
from acp_bridge._acp.wire.transcript import Transcript
from acp_bridge.errors import AgentExitedError, BridgeError, RunCancelled

LARGE_REPLIES = frozenset({"fs/read_text_file", "terminal/output"})
"""The agent's requests whose reply may be megabytes: built within the outbox's budget."""
DEFAULT_MAX_MESSAGE_BYTES = 32 << 20
CANCEL_REQUEST = "$/cancel_request"
CANCEL_WRITE_DEADLINE = 1.0
"""Seconds a ``$/cancel_request`` may take to write: it is sent from shielded clean-up."""
log = logging.getLogger("acp_bridge._acp.rpc.connection")
__all__ = ["JsonRpcConnection", "PendingRequest", "Response"]

UpdateCallback = Callable[[dict[str, Any]], None]
_NAMES: dict[type, str] = {dict: "NotificationMessage"}  # an update, as decode_line gives it
NotificationCallback = Callable[[str, Any], None]


class JsonRpcConnection:
    """One JSON-RPC peer. Use as ``async with``: the reader, the writer and the request
    handlers live inside."""

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        on_update: UpdateCallback,
        router: Router,
        on_notification: NotificationCallback | None = None,
        transcript: Transcript | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self._receive = receive
        self._on_update = on_update
        self._router = router
        self._on_notification = on_notification
        self._transcript = transcript
        self._max_message_bytes = max_message_bytes
        self._next_id = 0
        self._pending: dict[int, PendingRequest] = {}
        self._serving: dict[tuple[str, Any], list[tuple[RequestMessage, anyio.CancelScope]]] = {}
        """The agent's requests queued or being answered, by id, for its ``$/cancel_request``
        (bounded by the request pool: at most its workers and backlog). An agent may (wrongly)
        reuse an id while the first is still served: an id can name several, cancelled all."""
        self._tg: TaskGroup | None = None
        self._pool: RequestPool[RequestMessage | Skipped] | None = None
        self._eof = anyio.Event()
        self.outbox = Outbox(send, transcript, on_drop=self._unsent)
        self.stats = InboundStats()
        self.activity = Activity()
        """The agent's progress (updates, requests), for the stall timeout and the drain."""
        self.failure: BridgeError | None = None
        """Why the connection is unusable (EOF, oversize line, broken pipe), once it is."""

    # --- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._pool = RequestPool(self._tg, self._answer)
        self._tg.start_soon(self.outbox.run)
        self._tg.start_soon(self._read_loop)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None and self._pool is not None
        self._tg.cancel_scope.cancel()  # reader, writer, handlers: the run is over
        self._fail_pending(self.failure or AgentExitedError("connection closed"))
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            await self._pool.__aexit__(None, None, None)
            self._pool = None  # it holds a bound method of ours: a cycle keeping the run alive

    @property
    def closed(self) -> bool:
        return self._eof.is_set()

    async def wait_closed(self) -> None:
        """Until the agent's stdout reached EOF (or the reader gave up)."""
        await self._eof.wait()

    @property
    def closed_event(self) -> anyio.Event:
        """Set when the agent's stdout reached EOF (to wait on beside other events)."""
        return self._eof

    def set_deadline(self, deadline: float) -> None:
        """Every write from now on (and the one in progress) must be done by ``deadline``."""
        self.outbox.set_deadline(deadline)

    # --- sending ----------------------------------------------------------------------

    async def _write(
        self,
        message: dict[str, Any],
        label: str,
        *,
        written_within: float | None = None,
        request_id: int | None = None,
        deadline: float | None = None,
    ) -> bool:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        return await self.outbox.put(
            data, label, written_within=written_within, request_id=request_id, deadline=deadline
        )

    def _unsent(self, message: Outgoing, why: BridgeError) -> None:
        """A request that was never written gets no reply: it fails now, not at a timeout."""
        if message.request_id is not None:
            pending = self._pending.pop(message.request_id, None)
            if pending is not None:
                pending.resolve(Response(pending.method, failure=why))

    async def start_request(self, method: str, params: dict[str, Any]) -> PendingRequest:
        """Send a request; await ``.wait()`` on the result for the reply."""
        self._next_id += 1
        pending = PendingRequest(self._next_id, method)
        failure = self.failure or self.outbox.failure
        if failure is not None:
            pending.resolve(Response(method, failure=failure))
            return pending
        self._pending[pending.id] = pending
        try:
            await self._write(
                {"jsonrpc": "2.0", "id": pending.id, "method": method, "params": params},
                f"{method} (id {pending.id})",
                request_id=pending.id,
            )
        except BridgeError as exc:
            self._pending.pop(pending.id, None)
            pending.resolve(Response(method, failure=self.failure or exc))
        return pending

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request and return its result (raises the matching BridgeError).

        Cancelled while waiting (a phase deadline, a cancelled caller), it tells the agent
        with ``$/cancel_request`` before the cancellation goes on."""
        pending = await self.start_request(method, params)
        try:
            response = await pending.wait()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.cancel_request(pending)
            raise
        return response.unwrap()

    async def cancel_request(self, pending: PendingRequest) -> None:
        """Stop waiting for ``pending`` and send ``$/cancel_request`` for it (best effort,
        bounded: the agent may be gone or stuck)."""
        if pending.done:
            return
        self._pending.pop(pending.id, None)
        pending.resolve(
            Response(pending.method, failure=RunCancelled(f"{pending.method} was cancelled"))
        )
        if self.failure is not None or self.outbox.failure is not None:
            return
        until = anyio.current_time() + CANCEL_WRITE_DEADLINE
        with anyio.CancelScope(deadline=until), contextlib.suppress(BridgeError):
            await self.notify(CANCEL_REQUEST, {"requestId": pending.id}, deadline=until)

    async def notify(
        self,
        method: str,
        params: dict[str, Any],
        *,
        written_within: float | None = None,
        deadline: float | None = None,
    ) -> bool:
        """Send a notification. With ``written_within``: whether it was written by then;
        ``deadline``: its own, for clean-up after the phase's passed."""
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        return await self._write(message, method, written_within=written_within, deadline=deadline)

    # --- receiving --------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            failure = await read_lines(self._receive, self._max_message_bytes, self._handle_lines)
            self.failure = (
                failure or self.failure or AgentExitedError("the agent closed its stdout")
            )
        finally:
            self._eof.set()
            self._fail_pending(self.failure or AgentExitedError("the agent closed its stdout"))

    async def _handle_lines(self, lines: list[bytes]) -> None:
        """The lines of one read, in order (a request finding the backlog full waits there:
        back-pressure); then their transcript lines, in one write."""
        self.stats.lines += len(lines)
        first, waiting = self._handle_some(lines, 0)
        while waiting is not None:  # the backlog is full: wait for room, then go on
            assert self._pool is not None
            await self._pool.put(waiting, len(lines[first - 1]))
            first, waiting = self._handle_some(lines, first)
        if self._transcript is not None:
            self._transcript.end_read()

    def _handle_some(self, lines: list[bytes], first: int) -> tuple[int, Any]:
        """Lines from ``first`` on until a request finds the backlog full: where to go on from,
        and that request (or None). Updates go straight to the collector, counted at the end."""
        stats, on_update, transcript = self.stats, self._on_update, self._transcript
        incoming = transcript.incoming if transcript is not None else None
        updates = 0
        try:
            for index in range(first, len(lines)):
                if not (stripped := lines[index].strip()):
                    continue
                if (message := decode_line(stripped, stats)) is None:
                    if transcript is not None:
                        transcript.non_json(stripped)
                    continue
                if incoming is not None:
                    incoming(stripped)
                try:
                    if type(message) is dict:  # a session/update's params: the stream
                        updates += 1
                        on_update(message)
                    elif (waiting := self._dispatch(message, len(stripped))) is not None:
                        return index + 1, waiting
                except Exception:  # the boundary held, a consumer did not: skip, never crash
                    log.warning("could not use a message from the agent", exc_info=True)
                    name = _NAMES.get(type(message), type(message).__name__)
                    stats.skip(f"a {name} the bridge could not use")
            return len(lines), None
        finally:
            if updates:
                self.activity.touch(updates)  # progress, for timeouts.stall and the drain

    def _dispatch(self, message: Any, size: int) -> RequestMessage | Skipped | None:
        if isinstance(message, NotificationMessage):
            if message.method == "session/update":
                if message.params is None:
                    self.stats.skip("session/update without params")
                else:
                    self.activity.touch()
                    self._on_update(message.params)
            elif message.method == CANCEL_REQUEST:
                key = id_key((message.params or {}).get("requestId"))
                for _request, scope in self._serving.get(key, []):
                    scope.cancel()
            elif self._on_notification is not None:
                self._on_notification(message.method, message.params)
            return None
        if isinstance(message, ReplyMessage):
            self._handle_reply(message)
            return None
        if isinstance(message, Skipped):
            self.stats.skip(message.reason)
        elif isinstance(message, RequestMessage):
            self.activity.touch()
            # Registered now, not when a worker takes it: a $/cancel_request on the next
            # line must find it (a scope cancelled before it is entered starts out cancelled).
            served = self._serving.setdefault(id_key(message.id), [])
            served.append((message, anyio.CancelScope()))
        if isinstance(message, RequestMessage) or message.answer:
            assert self._pool is not None  # answered like any request: boundedly
            return None if self._pool.offer(message, size) else message
        return None

    def _handle_reply(self, message: ReplyMessage) -> None:
        pending = self._pending.pop(message.id, None)
        if pending is None:
            # Ours are 1…next_id: a reply there was answered already (or given up on).
            if 0 < message.id <= self._next_id:
                self.stats.late_replies += 1
            else:
                self.stats.unknown_replies += 1
            return
        if message.error is not None:
            pending.resolve(Response(pending.method, error=message.error))
        else:
            pending.resolve(Response(pending.method, result=message.result))

    def _fail_pending(self, failure: BridgeError) -> None:
        pending, self._pending = self._pending, {}
        for request in pending.values():
            request.resolve(Response(request.method, failure=failure))

    # --- answering the agent's requests -------------------------------------------------

    async def _answer(self, request: RequestMessage | Skipped) -> None:
        if isinstance(request, Skipped):  # meant as a request, but its id is unusable
            reply: dict[str, Any] = error_reply(
                None, INVALID_REQUEST, "Invalid request", request.reason
            )
        else:
            key = id_key(request.id)
            served = self._serving.get(key, [])
            scope = next((s for m, s in served if m is request), None) or anyio.CancelScope()
            self.activity.serving += 1  # the agent waits on us: not stalled
            async with contextlib.AsyncExitStack() as room:
                with scope:
                    try:
                        # Held until the reply is queued: see the outbox's reply_room.
                        large = request.method in LARGE_REPLIES
                        await room.enter_async_context(self.outbox.reply_room(large))
                        reply = await self._router.answer(request) or {}
                    except BridgeError:
                        if self.outbox.failure is None:
                            raise
                        return  # nobody reads a reply any more
                    finally:
                        served[:] = [(m, s) for m, s in served if m is not request]
                        if not served:
                            self._serving.pop(key, None)
                        self.activity.serving -= 1
                        self.activity.touch()
                if scope.cancelled_caught:  # the agent's $/cancel_request: a reply is owed
                    reply = error_reply(request.id, REQUEST_CANCELLED, "Request cancelled")
                if reply:
                    await self._send_reply(reply)
            return
        if reply:
            await self._send_reply(reply)

    async def _send_reply(self, reply: dict[str, Any]) -> None:
        try:
            await self._write(reply, f"reply to request {reply.get('id')!r}")
        except BridgeError:  # the agent is gone or stopped reading: nobody waits for it
            return
