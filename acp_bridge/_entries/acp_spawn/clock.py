"""The deadlines of one ``acp_spawn`` run, and its bounded end.

- The run's timeout T counts from the run's start (``RunContext.deadline``): start-up and
  session setup are inside it, each with its own limit too (:meth:`RunClock.phase`). Every
  wait on the agent runs under the current deadline, the connection's writes included.
- ``cancel`` stops the work gracefully; ``abort`` (a second Ctrl-C) skips every grace.
- The wind-down (:meth:`RunClock.wind_down`) is polite — cancel an unfinished turn, close the
  session, release terminals, end the agent — until :data:`KILL_RESERVE` before
  :data:`END_GRACE` seconds after the work stopped (or at once on ``abort``); then SIGKILL to
  every process the run started, whatever the polite steps managed. So a run with timeout T
  ends by T + END_GRACE, whatever the agent does.
- ``timeouts.stall``: a turn that shows no progress (no update, no request, none being
  served) for that long is cancelled like a timed-out one and ends ``stalled``.
- After a turn's reply, the updates that follow it at once are read (:meth:`RunClock.drain`)
  before the answer is taken for a check or a held turn's envelope.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from acp_bridge._acp.agent_process import KILL_RESERVE
from acp_bridge._entries.enveloped import END_GRACE
from acp_bridge._os.race import on_any, race, wait_any
from acp_bridge.errors import RunCancelled, RunTimeout

if TYPE_CHECKING:
    # Named in signatures only: a run makes its clock before its agent starts, and the
    # session machinery loads after that (run.py).
    from acp_bridge._acp.agent_process import AgentProcess
    from acp_bridge._acp.rpc.connection import JsonRpcConnection
    from acp_bridge._acp.services.client import ClientServices
    from acp_bridge._acp.session.acp_session import AcpSession
    from acp_bridge._acp.turn.prompt_turn import TurnOutcome
    from acp_bridge._acp.wire.transcript import Transcript
    from acp_bridge._os.process.procgroup import RunProcesses

DRAIN_QUIET = 0.02
"""After a turn's reply, updates are read while each comes within this of the last …"""
DRAIN_MOST = 0.25
"""… for at most this long."""
CANCEL_SHARE = 2.0
"""Seconds of END_GRACE kept from the wait for ``stopReason: cancelled`` (for the rest of
the wind-down): ``cancel_grace`` is cut to END_GRACE - CANCEL_SHARE."""


class RunClock:
    """The deadline of one run, its stoppers, and when the work stopped."""

    def __init__(
        self,
        deadline: float,
        timeout: float,
        cancel: anyio.Event | None = None,
        abort: anyio.Event | None = None,
        *,
        shutdown_grace: float = 3.0,
        transcript: Transcript | None = None,
        stall: float = 0.0,
    ) -> None:
        self.deadline = deadline
        """The run's own end (``anyio.current_time()``): its start + its timeout."""
        self.timeout = timeout
        self.cancel = cancel
        self.abort = abort
        self.stopped_at: float | None = None
        """When the work stopped other than by finishing (a timeout, a cancel)."""
        self.shutdown_grace = shutdown_grace
        self.transcript = transcript
        self.stall = stall
        """Seconds a turn may show no progress (``timeouts.stall``; 0: no limit)."""
        self.stalled = False
        """Whether the last turn was cancelled for showing no progress."""

    async def turn(self, session: AcpSession, prompt: str, cancel_grace: float) -> TurnOutcome:
        """One prompt turn under the run's deadline, against cancel/abort and, with a
        ``stall`` limit, against no progress for that long (then :attr:`stalled`: the turn is
        cancelled like a timeout); the wait for ``stopReason: cancelled`` is cut to leave the
        rest of the end grace."""
        self.stalled = False
        grace = min(cancel_grace, END_GRACE - CANCEL_SHARE)
        if self.stall <= 0:  # nothing to watch beside the turn: no task group
            outcome = await session.prompt(
                prompt, deadline=self.deadline, cancel=self.cancel, abort=self.abort, grace=grace
            )
        else:
            async with anyio.create_task_group() as watchers:
                stop = anyio.Event()
                watchers.start_soon(self._watch_stall, session, stop)
                watchers.start_soon(_forward, self.cancel, stop)
                outcome = await session.prompt(
                    prompt, deadline=self.deadline, cancel=stop, abort=self.abort, grace=grace
                )
                watchers.cancel_scope.cancel()
        if outcome.ended != "response":
            self.stopped_at = outcome.ended_at
        return outcome

    async def _watch_stall(self, session: AcpSession, stop: anyio.Event) -> None:
        await session.conn.activity.until_stalled(self.stall)
        self.stalled = True
        if self.transcript is not None:
            self.transcript.note(f"no progress for {self.stall:g}s (timeouts.stall): cancelling")
        stop.set()

    async def drain(self, session: AcpSession) -> None:
        """After a turn's reply: the updates agents send just after it (a last chunk, the
        usage) are read before its answer is taken — while they keep coming, each within
        DRAIN_QUIET of the last, DRAIN_MOST in all, never past the run's deadline."""
        most = min(DRAIN_MOST, max(0.0, self.deadline - anyio.current_time()))
        late = await session.conn.activity.drain(DRAIN_QUIET, most)
        if late and self.transcript is not None:
            self.transcript.note(f"read {late} update(s) or request(s) after the prompt's reply")

    async def phase(
        self,
        conn: JsonRpcConnection,
        job: Callable[[], Awaitable[object]],
        limit: float,
        what: str,
    ) -> None:
        """``job`` under its own ``limit`` and the run's deadline, against cancel/abort;
        RunTimeout (``what`` when the phase's own limit hit) or RunCancelled otherwise."""
        own = anyio.current_time() + limit
        deadline = min(own, self.deadline)
        conn.set_deadline(deadline)
        raced = await race(job, on_any(self.cancel, self.abort), deadline=deadline)
        if raced.finished:
            return
        self.stopped_at = anyio.current_time()
        if not raced.timed_out:
            raise RunCancelled("the run was cancelled")
        if own <= self.deadline:
            raise RunTimeout(what)
        raise RunTimeout(f"the run did not finish within {self.timeout:g}s (timeout)")

    def left(self) -> float:
        """Seconds until the run's deadline (0 when it has passed)."""
        return max(0.0, self.deadline - anyio.current_time())

    def end_by(self) -> float:
        """When the wind-down must be over: END_GRACE after the work stopped (now, for a
        run that finished), never later than END_GRACE after the run's deadline."""
        stopped = self.stopped_at if self.stopped_at is not None else anyio.current_time()
        return min(stopped, self.deadline) + END_GRACE

    async def wind_down(
        self,
        session: AcpSession,
        process: AgentProcess,
        services: ClientServices,
        started: RunProcesses,
    ) -> None:
        """Cancel an unfinished turn, close the session, release terminals, end the agent —
        while still reading, so updates sent after the prompt reply are not lost. Polite
        until KILL_RESERVE before the end (or an abort), then SIGKILL to everything."""
        end_by, grace, transcript = self.end_by(), self.shutdown_grace, self.transcript
        conn = session.conn
        conn.set_deadline(end_by - KILL_RESERVE)

        async def polite() -> None:
            if session.turn_in_progress and not conn.closed:
                await session.cancel_turn("the caller went away")
            await session.close(grace)
            await services.aclose()
            # What is still queued ($/cancel_request for a request we stopped waiting for,
            # say) is written before the agent's stdin closes: a write after is lost.
            await conn.outbox.drain()
            await process.end(end_by, hurry=self.abort)
            with anyio.move_on_after(grace):
                await conn.wait_closed()

        ended = await race(polite, on_any(self.abort), deadline=end_by - KILL_RESERVE)
        if not ended.finished:
            note = "shutdown deadline reached: SIGKILL to every process of the run"
            if transcript is not None:
                transcript.note(note)
            await process.end(end_by, hurry=self.abort)  # past its polite part: the kill
            await started.kill_all(wait=max(0.1, end_by - anyio.current_time()))
            with anyio.move_on_after(max(0.1, end_by - anyio.current_time())):
                await conn.wait_closed()
        if transcript is not None:
            for done in process.notes:
                transcript.note(done)


async def _forward(source: anyio.Event | None, target: anyio.Event) -> None:
    await wait_any(source)
    target.set()
