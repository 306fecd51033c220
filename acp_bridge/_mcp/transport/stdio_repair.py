"""Host lines on stdio the SDK could not read: repaired when the message is sound, else
answered — never silently dropped.

The SDK reads each line with a strict JSON parser and drops one it cannot parse without a
word, so a host's request on it gets no answer and the host waits for its own timeout (half
an hour, in some hosts' configs for delegated work). Two kinds of line reach this module:

- sound JSON the strict parser refuses: a lone UTF-16 surrogate escape (``"\\ud83d"``, what
  JavaScript's ``JSON.stringify`` writes for half an emoji — a task clipped mid-character by a
  model holds one). It is read by the ACP boundary's own rules (:func:`sound_object`: lone
  surrogates become U+FFFD, nesting bounded) and served;
- anything else that does not make a message — not JSON, not an object, nested too deep,
  not a JSON-RPC request: a request is answered with a JSON-RPC error (``-32700`` parse error
  or ``-32600`` invalid request) under its ``id`` when one can be read, else ``null`` as the
  spec says. A malformed notification or response gets nothing, as the spec says.
"""

from __future__ import annotations

import logging
import re
from contextvars import Context
from typing import Any, Self

import anyio
import mcp.types as types
import mcp_types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from acp_bridge._acp.wire.inbound import sound_object

log = logging.getLogger("acp_bridge.mcp")
_LEADING_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,200}")'
)
"""An ``id`` as the first member (after ``jsonrpc``), as clients write requests: read even
from a line that does not parse."""


def _refused_line(exc: Exception) -> bytes | None:
    """The line the SDK's parser refused, from its error."""
    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors(include_url=False)
    if len(errors) != 1 or errors[0]["type"] != "json_invalid":
        return None  # JSON, but no message: the SDK's own answer (or silence) stands
    raw = errors[0].get("input")
    return raw.encode("utf-8", "replace") if isinstance(raw, str) else None


def _leading_id(line: bytes) -> types.RequestId | None:
    found = _LEADING_ID.match(line)
    if found is None:
        return None
    text = found.group(1).decode()
    return text[1:-1] if text.startswith('"') else int(text)


def repair_line(exc: Exception) -> SessionMessage | types.JSONRPCError | None:
    """What to do with a line the SDK could not read: serve the message it holds, answer
    it with an error, or (None) drop it."""
    line = _refused_line(exc)
    if line is None:
        return None
    value = sound_object(line)
    if value is None:
        return _error(_leading_id(line), types.PARSE_ERROR, "Parse error")
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_python(value))
    except (ValidationError, RecursionError):
        pass
    request_id = value.get("id")
    if "method" not in value or request_id is None:  # a notification or a response
        return None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return _error(request_id, types.INVALID_REQUEST, "Invalid request")


def _error(request_id: types.RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


class RepairedStream:
    """The SDK's read stream, with lines it could not read repaired or answered."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Context | None:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            outcome = repair_line(item)
            if isinstance(outcome, SessionMessage):
                return outcome
            if outcome is None:
                return item
            log.warning("a line from the host is no request; answered %s", outcome.error.message)
            await self._write.send(SessionMessage(outcome))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
