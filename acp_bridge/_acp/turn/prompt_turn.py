"""One prompt turn's shared state and how it ended.

:class:`TurnSignals` is shared between the session (which cancels a turn) and the services
(which must answer pending permission requests ``cancelled`` when it does); it lives here,
below both, so neither imports the other.
"""

from __future__ import annotations

from functools import cached_property
from typing import Literal

import anyio

from acp_bridge._acp.rpc.connection import Response
from acp_bridge._acp.wire.schema import PromptResult, parse_reply
from acp_bridge.errors import BridgeError, ProtocolError, RunCancelled, RunTimeout


class TurnSignals:
    """Set when the current turn is being cancelled (a new event per turn)."""

    # Plain classes, not dataclasses: those compile their methods as every command starts.
    __slots__ = ("cancelled",)

    def __init__(self, cancelled: anyio.Event | None = None) -> None:
        self.cancelled = anyio.Event() if cancelled is None else cancelled


TurnEnd = Literal["response", "timeout", "cancelled"]


class TurnOutcome:
    def __init__(self, ended: TurnEnd, response: Response | None, ended_at: float = 0.0) -> None:
        self.ended = ended
        self.response = response
        # When the turn stopped waiting for its reply (``anyio.current_time()``).
        self.ended_at = ended_at
        # Set when the reply came but is not a prompt result (its ``result`` is then None).
        self.parse_error: ProtocolError | None = None

    @cached_property
    def result(self) -> PromptResult | None:
        """The prompt result, parsed once; None when there is none (or it is malformed)."""
        if self.response is None or self.response.failure or self.response.error:
            return None
        try:
            return parse_reply(PromptResult, self.response.result, "session/prompt")
        except ProtocolError as exc:
            self.parse_error = exc
            return None


def turn_error(outcome: TurnOutcome, timeout: float) -> BridgeError | None:
    """The error a turn ended with, if it ended other than with a reply."""
    if outcome.ended == "timeout":
        return RunTimeout(f"the agent did not finish within {timeout:g}s")
    if outcome.ended == "cancelled":
        return RunCancelled("the run was cancelled")
    return None
