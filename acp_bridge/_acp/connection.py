"""Newline-delimited JSON-RPC 2.0 over a pair of byte streams (DESIGN §4, transport).

- Framing: lines of any length up to ``max_message_bytes`` (a hard ceiling: past it the
  connection fails with ProtocolError instead of the process running out of memory).
  Non-JSON lines (agents that log on stdout) are skipped and counted.
- Our requests get integer ids; replies are matched by id. The agent's own request ids may
  be integers or strings and overlap ours, so a message is classified by its keys, never by
  its id: ``method`` + ``id`` is a request, ``method`` alone a notification, ``result`` or
  ``error`` a response.
- Agent→client requests each run in their own task (a blocking ``terminal/wait_for_exit``
  must not stall ``session/update``) and are answered by the :class:`Router` (router.py).
- ``session/update`` notifications bypass all of that: they go straight to a synchronous
  callback. They are the hot path (100 000s per second).
- ``$/cancel_request`` (ACP's request cancellation) works both ways. The agent's cancels the
  handler of that request, which is answered -32800 as the spec requires (a reply is still
  owed). Ours is sent when we stop waiting for one of our requests (a deadline, a cancelled
  caller): the spec defines it for every request and needs no capability, and an agent that
  does not know it ignores it like any unknown notification. ``session/prompt`` has its own
  cancel (``session/cancel``) and is never cancelled this way.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from acp_bridge._acp.router import Router, error_reply
from acp_bridge._acp.schema import INTERNAL_ERROR, REQUEST_CANCELLED
from acp_bridge._acp.transcript import Transcript
from acp_bridge.errors import (
    AgentExitedError,
    AgentRequestError,
    BridgeError,
    ProtocolError,
    RunCancelled,
)

READ_SIZE = 1 << 18
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20
NON_JSON_SAMPLES = 3
CANCEL_REQUEST = "$/cancel_request"
CANCEL_WRITE_DEADLINE = 1.0
"""Seconds a ``$/cancel_request`` may take to write: it is sent from shielded clean-up."""
log = logging.getLogger("acp_bridge._acp.connection")

UpdateCallback = Callable[[dict[str, Any]], None]
NotificationCallback = Callable[[str, Any], None]


@dataclass
class Response:
    """The agent's reply to one of our requests (or why there will be none)."""

    method: str
    result: Any = None
    error: dict[str, Any] | None = None
    failure: BridgeError | None = None

    def unwrap(self) -> Any:
        """The result, or the matching typed error."""
        if self.failure is not None:
            raise self.failure
        if self.error is not None:
            raise AgentRequestError(
                self.method,
                int(self.error.get("code", INTERNAL_ERROR)),
                str(self.error.get("message", "")),
                self.error.get("data"),
            )
        return self.result


@dataclass
class PendingRequest:
    """A request we sent whose reply may still be coming."""

    id: int
    method: str
    _done: anyio.Event = field(default_factory=anyio.Event)
    response: Response | None = None

    def resolve(self, response: Response) -> None:
        if self.response is None:
            self.response = response
            self._done.set()

    @property
    def done(self) -> bool:
        return self.response is not None

    async def wait(self) -> Response:
        """The reply; never raises (errors are in the Response), so it is safe in tasks."""
        await self._done.wait()
        assert self.response is not None
        return self.response


@dataclass
class LineStats:
    lines: int = 0
    non_json: int = 0
    non_json_samples: list[str] = field(default_factory=list)


class JsonRpcConnection:
    """One JSON-RPC peer. Use as ``async with``: the reader and request handlers live inside."""

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
        self._send = send
        self._on_update = on_update
        self._router = router
        self._on_notification = on_notification
        self._transcript = transcript
        self._max_message_bytes = max_message_bytes
        self._next_id = 0
        self._pending: dict[int, PendingRequest] = {}
        self._serving: dict[tuple[str, Any], anyio.CancelScope] = {}
        """The agent's requests being answered, by id, for its ``$/cancel_request``."""
        self._write_lock = anyio.Lock()
        self._tg: TaskGroup | None = None
        self._eof = anyio.Event()
        self.stats = LineStats()
        self.failure: BridgeError | None = None
        """Why the connection is unusable (EOF, oversize line, broken pipe), once it is."""

    # --- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._read_loop)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()  # reader and in-flight handlers: the run is over
        self._fail_pending(self.failure or AgentExitedError("connection closed"))
        return await self._tg.__aexit__(exc_type, exc, tb)

    @property
    def closed(self) -> bool:
        return self._eof.is_set()

    async def wait_closed(self) -> None:
        """Until the agent's stdout reached EOF (or the reader gave up)."""
        await self._eof.wait()

    # --- sending ----------------------------------------------------------------------

    async def _write(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        if self._transcript is not None:
            self._transcript.outgoing(data)
        try:
            async with self._write_lock:
                await self._send.send(data + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise AgentExitedError("the agent closed its stdin") from exc

    async def start_request(self, method: str, params: dict[str, Any]) -> PendingRequest:
        """Send a request; await ``.wait()`` on the result for the reply."""
        self._next_id += 1
        pending = PendingRequest(self._next_id, method)
        if self.failure is not None:
            pending.resolve(Response(method, failure=self.failure))
            return pending
        self._pending[pending.id] = pending
        try:
            await self._write(
                {"jsonrpc": "2.0", "id": pending.id, "method": method, "params": params}
            )
        except AgentExitedError as exc:
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
        if self.failure is not None:
            return
        with anyio.move_on_after(CANCEL_WRITE_DEADLINE), contextlib.suppress(AgentExitedError):
            await self.notify(CANCEL_REQUEST, {"requestId": pending.id})

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    # --- receiving --------------------------------------------------------------------

    async def _read_loop(self) -> None:
        parts: list[bytes] = []  # an unfinished line, kept as chunks: no O(n²) re-joining
        size = 0
        handle = self._handle_line
        try:
            while True:
                try:
                    chunk = await self._receive.receive(READ_SIZE)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                start = 0
                while (newline := chunk.find(b"\n", start)) >= 0:
                    if parts:
                        parts.append(chunk[start:newline])
                        handle(b"".join(parts))
                        parts.clear()
                        size = 0
                    else:
                        handle(chunk[start:newline])
                    start = newline + 1
                if start < len(chunk):
                    parts.append(chunk[start:] if start else chunk)
                    size += len(chunk) - start
                    if size > self._max_message_bytes:
                        self.failure = ProtocolError(
                            f"agent sent a line longer than {self._max_message_bytes} bytes "
                            "(the transport's memory ceiling)"
                        )
                        return
            if parts:
                handle(b"".join(parts))  # a last line without its newline
            self.failure = self.failure or AgentExitedError("the agent closed its stdout")
        finally:
            self._eof.set()
            self._fail_pending(self.failure or AgentExitedError("the agent closed its stdout"))

    def _handle_line(self, line: bytes) -> None:
        stats = self.stats
        stats.lines += 1
        stripped = line.strip()
        if not stripped:
            return
        message = _parse_object(stripped) if stripped[0] == 0x7B else None  # b"{"
        if not isinstance(message, dict):
            self._non_json(stripped)
            return
        if self._transcript is not None:
            self._transcript.incoming(stripped)
        method = message.get("method")
        if method is None:
            self._handle_response(message)
        elif "id" in message:
            assert self._tg is not None
            # Registered now, not when the task starts: a $/cancel_request on the next line
            # must find it (a scope cancelled before it is entered starts out cancelled).
            scope = self._serving[_id_key(message["id"])] = anyio.CancelScope()
            self._tg.start_soon(self._answer, message, scope)
        elif method == "session/update":
            params = message.get("params")
            if isinstance(params, dict):
                self._on_update(params)
        elif method == CANCEL_REQUEST:
            params = message.get("params")
            if isinstance(params, dict):
                serving = self._serving.get(_id_key(params.get("requestId")))
                if serving is not None:
                    serving.cancel()
        elif self._on_notification is not None:
            self._on_notification(method, message.get("params"))

    def _non_json(self, line: bytes) -> None:
        stats = self.stats
        stats.non_json += 1
        if len(stats.non_json_samples) < NON_JSON_SAMPLES:
            stats.non_json_samples.append(line[:200].decode("utf-8", "replace"))
        if self._transcript is not None:
            self._transcript.non_json(line)

    def _handle_response(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        pending = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
        if pending is None:
            return  # a reply to nothing we asked (or to a request we gave up on): ignore
        error = message.get("error")
        if error is not None:
            if not isinstance(error, dict):
                error = {"code": INTERNAL_ERROR, "message": str(error)}
            pending.resolve(Response(pending.method, error=error))
        else:
            pending.resolve(Response(pending.method, result=message.get("result")))

    def _fail_pending(self, failure: BridgeError) -> None:
        pending, self._pending = self._pending, {}
        for request in pending.values():
            request.resolve(Response(request.method, failure=failure))

    # --- answering the agent's requests -------------------------------------------------

    async def _answer(self, message: dict[str, Any], scope: anyio.CancelScope) -> None:
        key = _id_key(message.get("id"))
        with scope:
            try:
                reply = await self._router.answer(message)
            finally:
                if self._serving.get(key) is scope:
                    del self._serving[key]
        if scope.cancelled_caught:  # the agent's $/cancel_request: a reply is still owed
            reply = error_reply(message.get("id"), REQUEST_CANCELLED, "Request cancelled")
        if reply is None:
            return
        with contextlib.suppress(AgentExitedError):  # the agent is gone: nobody waits for it
            await self._write(reply)


def _id_key(request_id: Any) -> tuple[str, Any]:
    """A dict key for a JSON-RPC id: ``1`` and ``"1"`` are different requests."""
    return type(request_id).__name__, request_id


_raw_decode = json.JSONDecoder().raw_decode


def _parse_object(line: bytes) -> Any:
    """One JSON value spanning the whole (stripped) line, else None.

    ``json.loads(bytes)`` sniffs the encoding and matches whitespace around the value on
    every call; ACP lines are UTF-8 and already stripped, so decoding and ``raw_decode``
    directly does the same job at about half the cost (this runs for every update).
    """
    try:
        text = line.decode()
        value, end = _raw_decode(text)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
        return None
    return value if end == len(text) else None
