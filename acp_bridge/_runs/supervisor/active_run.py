"""One run a supervisor runs: its wakeup, its events, its budget, and how it is stopped.

A supervisor runs several runs at once, each through an entry call of its own
(:mod:`.entry_call`), and while it holds an agent several runs go through one entry call:
each follow-up turn is a run of its own. So what belongs to a run — the events it records,
the budget it is held to, a stop request, the process groups recorded for it — is an
:class:`ActiveRun`, begun when the run starts and ended when its outcome is committed,
whatever the entry call around it does.

Stopping (a request, a signal, a budget exceeded) sets the run's ``cancel`` event: the entry
ends the turn gracefully with its partial output. A run that does not end within
``HARD_GRACE`` seconds of that is cut off: the entry call's scope, shared by the runs of that
call (and no other), gets that deadline.

Process groups: every group the run's entry call starts is recorded for the run as it starts
(:func:`~acp_bridge._os.process.procgroup.report_groups`), so whoever finds the run ``lost`` ends
its agents, commands and terminals — and not those of the other runs of the same process.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import anyio
from anyio.abc import TaskGroup

from acp_bridge._os.process import proc
from acp_bridge._os.process.proc import Identity
from acp_bridge._runs import unfinished
from acp_bridge._runs.budget import Budget, BudgetGuard, join_live, leave_live, live_siblings
from acp_bridge._runs.recorder import MAX_EVENTS, EventRecorder
from acp_bridge._runs.store.run_records import Outcome, RunRecord
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.wakeups import Wakeup
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ErrorCode
from acp_bridge.events import Event

log = logging.getLogger("acp_bridge.runs")

HARD_GRACE = 30.0
"""Seconds a run asked to stop (or over budget) gets to end before its call is cut off."""
STOP_LOOK = 1.0
"""Seconds between looks for a stop request when no wakeup came (a missed one)."""


class Control:
    """How the running entry is asked to stop, and why it was."""

    def __init__(self, scope: anyio.CancelScope) -> None:
        self.reason: str | None = None  # "stop" or "budget"
        self.message = ""
        self.cancel = anyio.Event()
        self.abort = anyio.Event()
        """Set with ``cancel`` for a run over its budget: no grace, its processes killed."""
        self.scope = scope
        """The entry call's scope (shared by the runs of one call): cut HARD_GRACE after a stop."""

    def stop(self, reason: str, message: str) -> None:
        if self.reason is None:
            self.reason, self.message = reason, message
        self.cancel.set()  # the entry winds down gracefully, keeping its partial output
        if reason == "budget":
            # Without grace: an agent that ignores its cancel (or is slow to act on it)
            # would go on spending through it, past the overshoot the docs promise (what a
            # run reports after the others' last report). Its partial output is kept.
            self.abort.set()
        self.scope.deadline = min(self.scope.deadline, anyio.current_time() + HARD_GRACE)


class ActiveRun:
    """One run in progress in this process (a context manager: its wakeup)."""

    def __init__(
        self,
        store: Store,
        run: RunRecord,
        me: Identity,
        scope: anyio.CancelScope,
        groups: Iterable[Identity] = (),
    ):
        """``groups``: process groups of the entry call that live on into this run (a held
        agent serving a follow-up), recorded for it at once."""
        self.store = store
        self.run = run
        self.wakeup = Wakeup(store, [run.id])
        self.control = Control(scope)
        self.ended = False
        """Its outcome is committed (or being committed): nothing more of it is recorded."""
        self.tasks = anyio.CancelScope()
        self.groups: set[Identity] = set()
        self._tasks_started = False
        group_max = store.group_budget(run.group) if run.group else (None, None)
        self.guard = BudgetGuard(
            Budget(run.max_tokens, run.max_cost),
            group=run.group,
            group_budget=Budget(*group_max),
            spent_by_others=lambda: _spent_by_others(store, run),
        )
        join_live(run.group, run.id, self.guard)
        max_events = int(store.setting("max_events") or MAX_EVENTS)
        self.recorder = EventRecorder(
            store,
            run.id,
            already=run.events_count,
            max_events=max_events,
            wakeup_name=self.wakeup.name,
        )
        status = {"phase": "running", "supervisor_pid": me.pid}
        if run.follows:
            status["follows"] = run.follows
        self.recorder.add({"kind": "status", "task_id": run.id, "elapsed": 0, **status})
        self._record_groups(set(groups))

    def close(self) -> None:
        """Close the wakeup, unless the side tasks still use it (they close it as they end:
        a socket closed under a waiting task could see its number reused)."""
        if not self._tasks_started:
            self.wakeup.close()

    def on_event(self, event: Event) -> None:
        if self.ended:  # e.g. the agent's late updates while it is held: no run's any more
            return
        self.recorder.add(event.to_dict())
        if event.kind == "status" and event.data.get("session_id"):
            self.recorder.note(session_id=str(event.data["session_id"]))
        elif event.kind == "usage" and self.control.reason != "budget":
            # Once stopped for its budget the run is being killed: what it reports meanwhile
            # is no spending the bridge let happen, and counting it would charge the group
            # for the kill's own few milliseconds.
            reason = self.guard.observe(event.data)
            self.recorder.note(tokens=self.guard.tokens, cost=self.guard.cost)
            if reason:
                self.control.stop("budget", reason)

    def start(self, tg: TaskGroup) -> None:
        """Beside the entry, until :meth:`end`: flush events, watch for a stop request."""
        self._tasks_started = True
        tg.start_soon(self._side_tasks)

    async def _side_tasks(self) -> None:
        try:
            with self.tasks:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self.recorder.run)
                    tg.start_soon(self._watch_stop)
        finally:
            self.wakeup.close()

    def add_group(self, leader_pid: int) -> None:
        """Record a process group the entry call just started (the liveness rule kills it
        if this process dies). Never raises: a group left unrecorded still dies with this
        process (its leader's parent-death signal), a failed run start would not."""
        who = proc.identity(leader_pid)
        if who is not None:
            self._record_groups({who})

    def _record_groups(self, groups: set[Identity]) -> None:
        new = groups - self.groups
        if not new:
            return
        try:
            self.store.add_groups(self.run.id, new)
        except BridgeError:
            log.exception("%s: could not record process groups %s", self.run.id, new)
            return
        self.groups.update(new)

    def end(self, result: SubtaskResult | None) -> Outcome:
        """Stop recording (every event in the store before the envelope is) and say how the
        run ended: ``result`` as the budget and a stop request make it (None: cut off)."""
        self.ended = True
        leave_live(self.run.group, self.run.id)
        self.tasks.cancel()
        self.recorder.flush()
        run, control, guard = self.run, self.control, self.guard
        if result is None:  # cut off after HARD_GRACE: stopped, or over budget
            code = ErrorCode.BUDGET if control.reason == "budget" else ErrorCode.CANCELLED
            result = unfinished.run_failed(run, control.message or "stopped", code)
        if control.reason == "budget":
            result = unfinished.over_budget(result, control.message)
        elif (reason := guard.observe(result.meta.usage or {})) and result.status == "done":
            # The agent reported its usage only as the turn ended: too late to cancel.
            result = unfinished.over_budget(result, f"{reason} (reported as the turn ended)")
        stopped = control.reason == "stop"
        return unfinished.outcome(result, stopped=stopped, tokens=guard.tokens, cost=guard.cost)

    async def _watch_stop(self) -> None:
        while not self.store.stop_requested(self.run.id):
            await self.wakeup.wait(STOP_LOOK)
        self.control.stop("stop", "stopped on request")


def _spent_by_others(store: Store, run: RunRecord) -> tuple[int, float]:
    """What the other runs of ``run``'s group spent: those running in this process as they
    reported it last, the rest as last written to the store."""
    siblings = live_siblings(run.group or "", run.id)
    tokens, cost = store.group_spent(run.group or "", besides=[run.id, *siblings])
    for guard in siblings.values():
        tokens, cost = tokens + guard.tokens, cost + guard.cost
    return tokens, cost
