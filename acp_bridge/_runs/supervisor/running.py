"""The heavy half of a supervisor: running claimed runs through the public entry functions.

Imported only once a run may start (the entry code costs ~0.45 s of CPU to import). For each
run: the config is loaded for the caller's directory, the entry is called with ``on_event``
writing events to the store, and beside it the run's own tasks (:mod:`.active_run`: events,
stop requests, process groups). The envelope is committed before any doorbell rings; then
the next run of the lane is adopted if it came from the same environment (see
:mod:`~acp_bridge._runs.lanes`).

Each run is its stored :class:`~acp_bridge.EntryRequest`, run through
:func:`~acp_bridge.run_entry` with the run's id as the envelope's ``task_id``. Stopping (a
request, a signal, a budget exceeded) ends it gracefully, or cuts it off after
``HARD_GRACE`` (its envelope then written here). Runs the entry opens itself (a tool call
inside ``spawn``) are recorded by the reporter (:mod:`~acp_bridge._runs.store.foreground`), like any
foreground run.

Follow-ups (:mod:`~acp_bridge._runs.followups`): a run that follows an earlier one continues its ACP
session — through ``session/resume`` or ``session/load`` when it is carried by its own supervisor (a
refusal, never a fresh session, when the agent offers neither). And an ``acp_spawn`` run of
a profile with ``timeouts.idle`` hands its envelope over while its agent is still alive
(:meth:`Supervisor.follow_up`): it is committed, the agent held, and a follow-up claimed in
that time becomes the next turn of the same live session, a run of its own
(:mod:`~acp_bridge._runs.followups.holds`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pydantic
from anyio.abc import TaskGroup, TaskStatus

from acp_bridge._entries.acp_spawn.live_turns import FollowUp, Held
from acp_bridge._entries.request import EntryRequest, run_entry
from acp_bridge._os.proc import Identity
from acp_bridge._runs import envelopes, lanes
from acp_bridge._runs.followups.chain import chain_ids, session_to_continue
from acp_bridge._runs.followups.holds import wait_for_follow_up
from acp_bridge._runs.start import run_config
from acp_bridge._runs.store import foreground, retention
from acp_bridge._runs.store.records import RunRecord
from acp_bridge._runs.store.store import Store
from acp_bridge._runs.supervisor.active_run import ActiveRun
from acp_bridge._runs.wakeups import Wakeup, wake
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode
from acp_bridge.events import Event

log = logging.getLogger("acp_bridge.runs")

MAX_CARRIED = 100
WORKTREE_LOOKUP = 10.0  # seconds for `git worktree list` when a follow-up starts
"""Runs one supervisor carries before it exits and lets fresh supervisors take over."""


class Supervisor:
    """Carries claimed runs, one after another, in this process."""

    def __init__(
        self, store: Store, me: Identity, env_key: str, signalled: Callable[[], bool]
    ) -> None:
        self.store = store
        self.me = me
        self.env_key = env_key
        self.stopping = False
        self._signalled = signalled  # a signal that came before our receiver was listening
        self.turn: ActiveRun | None = None
        """The run being carried now (while an agent is held: the one that ended last)."""
        self._may_hold = False
        self._tg: TaskGroup | None = None

    async def carry_all(self, run_id: str) -> None:
        foreground.install()  # runs the entries open themselves are recorded too
        self.stopped = anyio.Event()
        async with anyio.create_task_group() as tg:
            await tg.start(self._signals)
            if self._signalled():
                self.stopping = True
                self.stopped.set()
            carried = 0
            next_id: str | None = run_id
            while next_id is not None:
                carried += 1
                adopt = not self.stopping and carried < MAX_CARRIED
                next_id = await self._carry(next_id, adopt=adopt)
            tg.cancel_scope.cancel()
        with contextlib.suppress(Exception):  # housekeeping must never fail a run
            retention.maybe_prune(self.store)

    async def _signals(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                self.stopping = True  # finish the current run as cancelled, adopt nothing
                self.stopped.set()  # and let go of a held agent
                turn = self.turn
                if turn is not None and not turn.ended:
                    self.store.request_stop(turn.run.id)
                    turn.control.stop("stop", "stopped: the run's supervisor got a signal")

    async def _carry(self, run_id: str, *, adopt: bool) -> str | None:
        run = self.store.get(run_id)
        if run is None:
            return None
        self._may_hold = adopt  # a supervisor that would not adopt holds nothing either
        self.turn = ActiveRun(self.store, run, self.me, anyio.CancelScope())
        result: SubtaskResult | None
        try:
            result = await self._run(self.turn)
        except Exception as exc:  # a bug here must still end the run, not lose it
            log.exception("%s: the supervisor failed", self.turn.run.id)
            error = f"the run's supervisor failed: {type(exc).__name__}: {exc}"
            result = envelopes.run_failed(self.turn.run, error, ErrorCode.INTERNAL_ERROR)
        turn, self.turn = self.turn, None
        if turn.ended:  # committed when its agent was held; the entry's last envelope repeats it
            return None
        adopt_env = self.env_key if adopt else None
        return self._end(turn, result, adopt_env=adopt_env)[1]

    def _end(
        self,
        turn: ActiveRun,
        result: SubtaskResult | None,
        *,
        adopt_env: str | None = None,
        hold_until: float | None = None,
    ) -> tuple[bool, str | None]:
        """Commit how ``turn``'s run ended (see ``lanes.finish``), then ring whoever waits."""
        run_id = turn.run.id
        outcome = turn.end(result)
        written, adopted = lanes.finish(
            self.store, run_id, outcome, self.me, adopt_env=adopt_env, hold_until=hold_until
        )
        if not written:
            log.warning("%s: ended elsewhere meanwhile; this outcome was not recorded", run_id)
        wake(self.store, [run_id, *([adopted] if adopted else []), *lanes.heads(self.store)])
        turn.close()
        return written, adopted

    async def _run(self, turn: ActiveRun) -> SubtaskResult | None:
        """Run ``turn``'s entry (and the follow-ups it takes); its last envelope (None: cut
        off after HARD_GRACE)."""
        run = turn.run
        if run.stop_requested is not None or self.stopping:
            turn.control.reason = "stop"
            return envelopes.run_failed(run, "stopped before it started", ErrorCode.CANCELLED)
        if reason := turn.guard.spent_before_start():
            return envelopes.run_failed(run, reason, ErrorCode.BUDGET)
        result: SubtaskResult | None = None
        async with anyio.create_task_group() as tg:
            self._tg = tg
            turn.start(tg)
            with turn.control.scope:
                result = await self._call(run, turn.control.cancel)
            tg.cancel_scope.cancel()  # the side tasks of whichever run is carried now
        self._tg = None
        return result

    def _on_event(self, event: Event) -> None:
        if self.turn is not None:
            self.turn.on_event(event)

    async def _in_kept_worktree(self, request: EntryRequest, follows: str) -> EntryRequest:
        """``request`` going on in the worktree an earlier turn of its session kept, if any:
        a resumed session must find the files its earlier turns changed (a fresh worktree
        would start from the repository's HEAD without them)."""
        if (
            request.entry != "acp_spawn"
            or request.option("worktree") is not None
            or not request.cwd
        ):
            return request
        from acp_bridge._os.worktree import kept_worktree  # git's part: follow-ups only

        chain = chain_ids(self.store.db, follows)
        found = await kept_worktree(Path(request.cwd), chain, timeout=WORKTREE_LOOKUP)
        return request if found is None else request.replace(worktree=str(found))

    async def _call(self, run: RunRecord, cancel: anyio.Event) -> SubtaskResult:
        """The entry's envelope (entries never raise; reading the request or config may)."""
        with contextlib.suppress(OSError):  # relative paths as the caller meant them
            os.chdir(run.caller_cwd)
        try:
            request = EntryRequest.model_validate({**(run.request or {}), "task_id": run.id})
        except pydantic.ValidationError as exc:
            error = f"the run's stored request is not valid: {exc}"
            return envelopes.run_failed(run, error, ErrorCode.CONFIG_ERROR)
        if run.follows is not None and request.option("resume") is None:
            try:
                session_id = session_to_continue(self.store.db, run.follows)
            except ConfigError as exc:
                return envelopes.run_failed(run, str(exc), exc.code)
            request = request.replace(resume=session_id)
            request = await self._in_kept_worktree(request, run.follows)
        try:
            config = run_config(run)
        except BridgeError as exc:
            return envelopes.run_failed(run, str(exc), exc.code)
        with foreground.carrying(run.id):
            result = await run_entry(
                request, config=config, on_event=self._on_event, cancel=cancel,
                follow_ups=self.follow_up,
            )  # fmt: skip
        if run.follows is not None and result.status == "failed" and not result.meta.session_method:
            result = envelopes.not_continued(result, run.follows)
        return result

    async def follow_up(self, result: SubtaskResult, held: Held) -> FollowUp | None:
        """The entry's :class:`~acp_bridge._entries.acp_spawn.live_turns.FollowUps` hook: commit the
        turn's run with its agent held, then hand over a follow-up claimed in the idle time."""
        turn = self.turn
        assert turn is not None and self._tg is not None
        left = held.until - anyio.current_time()
        run_id = turn.run.id
        if not self._may_hold or self.stopping or turn.control.reason or left <= 0:
            return None  # not held: the entry winds down, and its envelope is committed after
        if self.store.stop_requested(run_id):  # asked to stop as the turn ended: no hold
            return None
        turn.record_groups()  # the held agent's, should this process die while it waits
        with Wakeup(self.store, [run_id]) as wakeup:  # listening before the hold can be seen
            written, _ = self._end(turn, result, hold_until=time.time() + left)
            if not written:
                return None
            claimed = await wait_for_follow_up(
                self.store, self.me, run_id, wakeup, held, self.stopped
            )
        if claimed is None:
            return None
        follow = self.store.get(claimed)
        assert follow is not None
        turn = self.turn = ActiveRun(self.store, follow, self.me, turn.control.scope)
        turn.start(self._tg)
        try:
            request = EntryRequest.model_validate(follow.request or {})
        except pydantic.ValidationError as exc:
            error = f"the run's stored request is not valid: {exc}"
            self._end(turn, envelopes.run_failed(follow, error, ErrorCode.CONFIG_ERROR))
            return None
        if reason := turn.guard.spent_before_start():  # its group's total used up meanwhile
            self._end(turn, envelopes.run_failed(follow, reason, ErrorCode.BUDGET))
            return None
        return FollowUp(
            task=request.task,
            task_id=follow.id,
            timeout=request.option("timeout"),
            cancel=turn.control.cancel,
            output_schema=request.option("output_schema"),
        )
