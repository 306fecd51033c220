"""Follow-up turns in one live ACP session: how an agent is kept between turns
(docs/explanation/runs.md, follow-up turns).

A run of ``acp_spawn`` given ``follow_ups`` (the run layer's supervisor gives one, see
``acp_bridge/_runs/held_agents.py``) does not end after its turn when the profile's
``timeouts.idle`` is above 0 and the session is sound (the prompt was answered, the agent is
still there). It hands the turn's envelope to the hook, with a :class:`Held`: until when it
may wait, and an event set if the agent goes away meanwhile. The hook answers with the next
turn (a :class:`FollowUp`: a run of its own, with its own task id, deadline and cancel) or
None; then the run winds down as always. Every turn is bounded like a whole run: its
timeout T counts from the moment the turn is handed over, and the wind-down after it keeps
to END_GRACE (clock.py). The hold itself is bounded by the idle time: the hook must
answer by ``Held.until`` (or as soon as ``Held.gone`` is set).

Each turn's envelope is its own: its answer, stop reason, tool calls, permissions, usage and
the files the bridge wrote for it (``AcpResult.next_turn``). The session id, the transcript
(one file, the first turn's) and the agent's stderr tail are the session's. The envelope that
``acp_spawn`` returns at the end is the last turn's (its ``task_id``); when that turn was
handed to the hook already, it is the same turn again, built after the wind-down.
"""

from __future__ import annotations

import time
from typing import Protocol

import anyio

from acp_bridge._entries.enveloped import finish_envelope
from acp_bridge.envelope import SubtaskResult


class FollowUp:
    """The next turn in a held session."""

    # A plain class, not a dataclass: these records are made on every start-up's import
    # path, where a dataclass compiles each generated method from source (~2-4 M
    # instructions a class, issue 24). Never changed once made.
    __slots__ = ("abort", "cancel", "output_schema", "task", "task_id", "timeout")

    def __init__(
        self,
        task: str,
        task_id: str,
        timeout: float | None = None,
        cancel: anyio.Event | None = None,
        output_schema: str | None = None,
        abort: anyio.Event | None = None,
    ) -> None:
        self.task = task
        self.task_id = task_id
        self.timeout = timeout
        """Seconds the turn may take (default: the profile's ``timeouts.run``)."""
        self.cancel = cancel
        """Set to end the turn gracefully (``session/cancel``), like a run's ``cancel``."""
        self.output_schema = output_schema
        self.abort = abort
        """Set to end it now, no grace (a run over its budget), like a run's ``abort``."""


class Held:
    """What the hook is told while the agent waits for it."""

    __slots__ = ("gone", "until")

    def __init__(self, until: float, gone: anyio.Event | None = None) -> None:
        self.until = until
        """``anyio.current_time()`` by which the hook must answer (the idle time's end)."""
        self.gone = anyio.Event() if gone is None else gone
        """Set when the agent's connection closes meanwhile: nothing is held any more."""


class FollowUps(Protocol):
    """Called with each turn's envelope while its agent is held; the next turn, or None."""

    async def __call__(self, result: SubtaskResult, held: Held) -> FollowUp | None: ...


class Turn:
    """Which run a turn of the session is: its id, and when it began (``time.monotonic``)."""

    __slots__ = ("started", "task_id")

    def __init__(self, task_id: str, started: float | None = None) -> None:
        self.task_id = task_id
        self.started = time.monotonic() if started is None else started

    def label(self, result: SubtaskResult, depth: int | None) -> SubtaskResult:
        """``result`` as this turn's envelope: its task id and its own duration."""
        return finish_envelope(result, "acp_spawn", depth, self.started, self.task_id)
