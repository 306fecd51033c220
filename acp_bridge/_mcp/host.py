"""What the bridge can send the MCP host on one request, each send bounded by a deadline.

Three things: progress (``notifications/progress``, sent only if the host gave the call a
progress token), log messages (``notifications/message``: on the handshake protocols at or
above the level the host set with ``logging/setLevel``, default ``info``; on 2026-07-28 only
what the request opted in to), and elicitations. An elicitation is a request mid-call on the
handshake protocols, where the host declared it; on 2026-07-28 a server may not send
requests, so questions go back as the call's ``input_required`` result instead
(:mod:`.relay`). A host that does not read its input must not stall a run: a send that does
not go out within ``SEND_TIMEOUT`` seconds is dropped.
"""

from __future__ import annotations

import logging
from typing import Any, get_args

import anyio
import mcp.types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from acp_bridge._mcp.tool_runs import ElicitParams, LogLine

SEND_TIMEOUT = 5.0
LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)
"""Severity ascending (RFC 5424, the order the SDK declares them in)."""
log = logging.getLogger("acp_bridge.mcp")


class LogGate:
    """The lowest level the host wants (``logging/setLevel``; handshake protocols)."""

    def __init__(self, level: types.LoggingLevel = "info") -> None:
        self.level = level

    def allows(self, level: types.LoggingLevel) -> bool:
        return LEVELS.index(level) >= LEVELS.index(self.level)


class Host:
    """The channel back to the host of one ``tools/call``."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], gate: LogGate) -> None:
        self._ctx = ctx
        self._gate = gate
        self.modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self.can_request = ctx.session.can_send_request and not self.modern
        caps = ctx.session.client_capabilities
        elicitation = caps.elicitation if caps is not None else None
        # An empty elicitation capability is form mode (the 2025-06-18 form of it).
        self.form = elicitation is not None and (
            elicitation.form is not None or elicitation.url is None
        )
        self.url = elicitation is not None and elicitation.url is not None

    @property
    def can_ask(self) -> bool:
        """Whether questions can reach the host: mid-call, or between 2026-07-28 rounds."""
        return self.form and (self.can_request or self.modern)

    async def progress(self, number: float, text: str) -> None:
        with anyio.move_on_after(SEND_TIMEOUT):
            await self._ctx.session.report_progress(number, None, text)

    async def log(self, line: LogLine, *, scoped: bool = True) -> None:
        """A log message on this call's stream (on streamable HTTP, the call's response
        stream); ``scoped=False``: on the connection's own channel, which outlives a
        cancelled call (handshake protocols only: 2026-07-28 has no such channel)."""
        if not self.modern and not self._gate.allows(line.level):
            return
        related = self._ctx.request_id if scoped or self.modern else None
        with anyio.move_on_after(SEND_TIMEOUT):
            await self._ctx.session.send_log_message(
                line.level, line.text, logger=line.logger, related_request_id=related
            )

    async def elicit(self, params: ElicitParams, timeout: float) -> types.ElicitResult | None:
        """The host's answer to one question mid-call; None when there is none in time."""
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        try:
            with anyio.move_on_after(timeout):
                return await self._ctx.session.send_request(
                    types.ElicitRequest(params=params), types.ElicitResult, metadata=metadata
                )
        except (MCPError, ValidationError) as exc:  # the host refused or answered nonsense
            log.warning("the host's elicitation failed: %s", exc)
        return None
