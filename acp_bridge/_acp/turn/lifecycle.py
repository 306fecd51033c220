"""ACP v2's turn lifecycle: ``state_update`` snapshots (running, requires_action, idle).

In v2 ``session/prompt`` only acknowledges that the prompt was inserted (``{}`` or
``{messageId}``); the turn ends when the agent reports ``idle``, with its stop reason (and
for ``error``, the failure). A new session is idle until told otherwise, and a snapshot may
repeat: an ``idle`` ends the turn only once the turn has begun (a ``running`` or
``requires_action`` of this turn was seen, or the idle names a stop reason), so a stale
idle from before the prompt cannot end it. ``requires_action`` (the agent waits on a
permission or a question) never ends a turn. Unknown states, ``_``-prefixed or newer, are
kept as they are and change nothing.
"""

from __future__ import annotations

from typing import Any

import anyio

from acp_bridge._acp.rpc.pending import Response
from acp_bridge.events import EventSink

FOREGROUND = frozenset({"running", "requires_action"})


class TurnState:
    """The v2 session state of the current turn, and the event its end sets."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self.state = "idle"
        self.began = False
        self.ended = anyio.Event()
        self.stop_reason: str | None = None
        self.error: dict[str, Any] | None = None

    def begin(self) -> None:
        """A prompt is about to be sent: what ends this turn is still to come."""
        self.began = False
        self.ended = anyio.Event()
        self.stop_reason, self.error = None, None

    def apply(self, update: dict[str, Any]) -> None:
        state = update.get("state")
        if not isinstance(state, str):
            raise TypeError("state_update needs a state")
        state = state[:64]
        changed = state != self.state
        self.state = state
        if state in FOREGROUND:
            self.began = True
        elif state == "idle":
            stop = update.get("stopReason")
            stop = stop[:64] if isinstance(stop, str) else None
            if self.began or stop is not None:
                self.stop_reason = stop
                error = update.get("error")
                self.error = error if isinstance(error, dict) else None
                self.ended.set()
        if changed:
            self._sink.emit("status", phase=state)


V1_TURN_END = (
    "the agent ended a v2 turn the v1 way (stopReason in the session/prompt reply, no idle): "
    "the turn ended there"
)
NO_MESSAGE_ID = "the agent acknowledged a v2 prompt without the messageId the v2 schema requires"


def acknowledged(response: Response) -> bool:
    """Whether a v2 ``session/prompt`` reply says the prompt was inserted: ``{messageId}``,
    or ``{}`` (the v2 schema requires the id; the SDK's own agents have sent ``{}``: accepted,
    with the warning :data:`NO_MESSAGE_ID`)."""
    if response.failure is not None or response.error is not None:
        return False
    result = response.result
    return isinstance(result, dict) and type(result.get("messageId", "")) is str


def no_message_id(response: Response) -> bool:
    return isinstance(response.result, dict) and "messageId" not in response.result


def ended_the_v1_way(response: Response) -> bool:
    """A v2 prompt reply that is v1's turn end (``{stopReason}``), as agents that echo the
    version they are asked for send it (fast-agent 0.10.45 under ``protocol: 2``): the turn
    is over, no ``idle`` will come."""
    result = response.result
    return (
        response.failure is None
        and response.error is None
        and isinstance(result, dict)
        and isinstance(result.get("stopReason"), str)
    )


def turn_result(state: TurnState, reply: Response) -> Response:
    """A v2 turn as a v1 prompt reply would have ended it, for the one turn model: the
    stop reason of its ``idle`` (none reported: ``end_turn``), or its ``error`` as an error
    reply."""
    if state.stop_reason == "error":
        error = state.error or {}
        code, message = error.get("code"), error.get("message")
        return Response(
            reply.method,
            error={
                "code": code if type(code) is int else -32603,
                "message": message if isinstance(message, str) else "the agent's work failed",
            },
        )
    return Response(reply.method, result={"stopReason": state.stop_reason or "end_turn"})
