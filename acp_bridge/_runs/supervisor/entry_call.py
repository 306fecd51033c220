"""One entry call in a supervisor: a claimed run through its entry function, and the
follow-up turns its held agent takes.

The supervisor (:mod:`.running`) runs several runs at once, each an :class:`EntryCall` in
a task of its own: the config is loaded for the caller's directory, the stored
:class:`~acp_bridge.EntryRequest` runs through :func:`~acp_bridge.run_entry` with the run's id
as the envelope's ``task_id``, ``on_event`` writes its events to the store, and beside it
run the run's own tasks (:mod:`.active_run`: events, stop requests). Every process group the
call starts is recorded for the run it serves at that moment. The envelope is committed
before any waiter is woken. Stopping (a request, a signal, a budget exceeded) ends it
gracefully, or cuts off this call (and no other) after ``HARD_GRACE``, its envelope then
written here. Runs the entry opens itself (a tool call inside ``spawn``) are recorded by
the reporter (:mod:`~acp_bridge._runs.foreground`), like any foreground run.

Follow-ups (docs/explanation/runs.md, follow-up turns): a run that follows an earlier one
continues its ACP session — through ``session/resume`` or ``session/load`` when it runs as a
call of its own (a refusal, never a fresh session, when the agent offers neither). And an
``acp_spawn`` run of a profile with ``timeouts.idle`` hands its envelope over while its agent
is still alive (:meth:`EntryCall.follow_up`): it is committed, the agent held, and a
follow-up claimed in that time becomes the next turn of the same live session, a run of its
own in the same call (:mod:`~acp_bridge._runs.held_agents`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from typing import Protocol

import anyio
import pydantic
from anyio.abc import TaskGroup

from acp_bridge._entries.acp_spawn.live_turns import FollowUp, Held
from acp_bridge._entries.request import EntryRequest, run_entry_with_follow_ups
from acp_bridge._os.fs.locations import state_dir
from acp_bridge._os.process.proc import Identity
from acp_bridge._os.process.procgroup import report_groups
from acp_bridge._runs import foreground, unfinished
from acp_bridge._runs.held_agents import wait_for_follow_up
from acp_bridge._runs.run_options import run_config
from acp_bridge._runs.store import lanes
from acp_bridge._runs.store.run_records import RunRecord
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.store.session_chains import chain_ids, session_to_continue
from acp_bridge._runs.supervisor.active_run import ActiveRun
from acp_bridge._runs.wakeups import Wakeup, wake
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode
from acp_bridge.events import Event


class Supervisor(Protocol):
    """What an entry call reads of the supervisor that runs it (:mod:`.running`)."""

    store: Store
    me: Identity
    stopping: bool
    stopped: anyio.Event

    @property
    def adopt_env(self) -> str | None: ...

    @property
    def may_hold(self) -> bool: ...


log = logging.getLogger("acp_bridge.runs")

WORKTREE_LOOKUP = 10.0
"""Seconds for finding the repository's top (``git rev-parse``) when a follow-up starts."""


class EntryCall:
    """One claimed run through its entry (and the follow-ups its agent takes)."""

    def __init__(self, supervisor: Supervisor, run_id: str) -> None:
        self.supervisor = supervisor
        self.store = supervisor.store
        self.me = supervisor.me
        self.run_id = run_id
        self.turn: ActiveRun | None = None
        """The run in progress now (while an agent is held: the one that ended last)."""
        self._tg: TaskGroup | None = None

    async def run(self) -> str | None:
        """Take the run through its entry to its committed envelope; the id of a run adopted
        as it was committed (the supervisor runs that one next), or None."""
        run = self.store.get(self.run_id)
        if run is None:
            return None
        self.turn = ActiveRun(self.store, run, self.me, anyio.CancelScope())
        result: SubtaskResult | None
        try:
            result = await self._run_turn(self.turn)
        except Exception as exc:  # a bug here must still end the run, not lose it
            log.exception("%s: the supervisor failed", self.turn.run.id)
            error = f"the run's supervisor failed: {type(exc).__name__}: {exc}"
            result = unfinished.run_failed(self.turn.run, error, ErrorCode.INTERNAL_ERROR)
        turn, self.turn = self.turn, None
        if turn.ended:  # committed when its agent was held; the entry's last envelope repeats it
            return None
        return self._end(turn, result, adopt_env=self.supervisor.adopt_env)[1]

    def stop(self, message: str) -> None:
        """Stop the run in progress now (the supervisor got a signal)."""
        turn = self.turn
        if turn is not None and not turn.ended:
            self.store.request_stop(turn.run.id)
            turn.control.stop("stop", message)

    def _end(
        self,
        turn: ActiveRun,
        result: SubtaskResult | None,
        *,
        adopt_env: str | None = None,
        hold_until: float | None = None,
    ) -> tuple[bool, str | None]:
        """Commit how ``turn``'s run ended (see ``lanes.finish``), then wake whoever waits."""
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

    async def _run_turn(self, turn: ActiveRun) -> SubtaskResult | None:
        """Run ``turn``'s entry (and the follow-ups it takes); its last envelope (None: cut
        off after HARD_GRACE)."""
        run = turn.run
        if run.stop_requested is not None or self.supervisor.stopping:
            turn.control.reason = "stop"
            return unfinished.run_failed(run, "stopped before it started", ErrorCode.CANCELLED)
        if reason := turn.guard.spent_before_start():
            return unfinished.run_failed(run, reason, ErrorCode.BUDGET)
        result: SubtaskResult | None = None
        async with anyio.create_task_group() as tg:
            self._tg = tg
            turn.start(tg)
            with turn.control.scope, report_groups(self._on_group):
                result = await self._call(run, turn.control.cancel, turn.control.abort)
            tg.cancel_scope.cancel()  # the side tasks of whichever run is in progress now
        self._tg = None
        return result

    def _on_event(self, event: Event) -> None:
        if self.turn is not None:
            self.turn.on_event(event)

    def _on_group(self, leader_pid: int) -> None:
        if self.turn is not None:
            self.turn.add_group(leader_pid)

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
        from acp_bridge._os.git.worktree_reopening import (
            kept_worktree,  # git's part: follow-ups only
        )

        chain = chain_ids(self.store.db, follows)
        found = await kept_worktree(
            Path(request.cwd), chain, state_dir=state_dir(), timeout=WORKTREE_LOOKUP
        )
        return request if found is None else request.replace(worktree=str(found))

    async def _call(self, run: RunRecord, cancel: anyio.Event, abort: anyio.Event) -> SubtaskResult:
        """The entry's envelope (entries never raise; reading the request or config may)."""
        with contextlib.suppress(OSError):  # relative paths as the caller meant them
            os.chdir(run.caller_cwd)  # the same for every run of this process (env_key)
        try:
            request = EntryRequest.model_validate({**(run.request or {}), "task_id": run.id})
        except pydantic.ValidationError as exc:
            error = f"the run's stored request is not valid: {exc}"
            return unfinished.run_failed(run, error, ErrorCode.CONFIG_ERROR)
        if run.follows is not None and request.option("resume") is None:
            try:
                session_id = session_to_continue(self.store.db, run.follows)
            except ConfigError as exc:
                return unfinished.run_failed(run, str(exc), exc.code)
            request = request.replace(resume=session_id)
            request = await self._in_kept_worktree(request, run.follows)
        try:
            config = run_config(run)
        except BridgeError as exc:
            return unfinished.run_failed(run, str(exc), exc.code)
        with foreground.recorded_elsewhere(run.id):
            result = await run_entry_with_follow_ups(
                request, config=config, on_event=self._on_event, cancel=cancel, abort=abort,
                follow_ups=self.follow_up,
            )  # fmt: skip
        if run.follows is not None and result.status == "failed" and not result.meta.session_method:
            result = unfinished.not_continued(result, run.follows)
        return result

    async def follow_up(self, result: SubtaskResult, held: Held) -> FollowUp | None:
        """The entry's :class:`~acp_bridge._entries.acp_spawn.live_turns.FollowUps` hook:
        commit the turn's run with its agent held, then hand over a follow-up claimed in the
        idle time."""
        turn, supervisor = self.turn, self.supervisor
        assert turn is not None and self._tg is not None
        left = held.until - anyio.current_time()
        run_id = turn.run.id
        if not supervisor.may_hold or supervisor.stopping or turn.control.reason or left <= 0:
            return None  # not held: the entry winds down, and its envelope is committed after
        if self.store.stop_requested(run_id):  # asked to stop as the turn ended: no hold
            return None
        with Wakeup(self.store, [run_id]) as wakeup:  # listening before the hold can be seen
            written, _ = self._end(turn, result, hold_until=time.time() + left)
            if not written:
                return None
            claimed = await wait_for_follow_up(
                self.store, self.me, run_id, wakeup, held, supervisor.stopped
            )
        if claimed is None:
            return None
        follow = self.store.get(claimed)
        assert follow is not None
        # The held agent (and whatever else the call still runs) serves the follow-up now.
        turn = self.turn = ActiveRun(
            self.store, follow, self.me, turn.control.scope, groups=turn.groups
        )
        turn.start(self._tg)
        try:
            request = EntryRequest.model_validate(follow.request or {})
        except pydantic.ValidationError as exc:
            error = f"the run's stored request is not valid: {exc}"
            self._end(turn, unfinished.run_failed(follow, error, ErrorCode.CONFIG_ERROR))
            return None
        if reason := turn.guard.spent_before_start():  # its group's total used up meanwhile
            self._end(turn, unfinished.run_failed(follow, reason, ErrorCode.BUDGET))
            return None
        return FollowUp(
            task=request.task,
            task_id=follow.id,
            timeout=request.option("timeout"),
            cancel=turn.control.cancel,
            abort=turn.control.abort,
            output_schema=request.option("output_schema"),
        )
