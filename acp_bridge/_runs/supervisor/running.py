"""The heavy half of a supervisor: running claimed runs, several at once, until idle.

Imported only once a run may start (the entry code costs ~0.3 s of CPU to import). From then on the
supervisor accepts runs (:mod:`~acp_bridge._runs.store.supervisors`): every detached run started
from its environment while it takes new ones is handed to it, and it runs them concurrently, each an
:class:`~.entry_call.EntryCall` in a task of its own — its own deadlines, budget, stop and cancel
scope (:mod:`.active_run`), so stopping, cutting off or failing one run touches no other. Beside
them, the *intake* claims the runs handed over as their lanes let them start
(:func:`~acp_bridge._runs.store.lanes.claim_mine`): it wakes when a starter wakes the
supervisor's wakeup, when a lane slot frees, and when a call ends.

The supervisor exits once it has had no run left for ``runs.supervisor_idle`` seconds
(2 s by default): it leaves the list of accepting supervisors in the same transaction that
finds nothing of its own queued, running or held, so no run is ever handed to a process on
its way out. After ``MAX_RUNS`` runs it takes no new ones (fresh supervisors take over) and
exits once its own have ended.

SIGTERM or SIGINT stops all its runs, gracefully (each run ends ``cancelled``),
ends its queued runs as stopped, lets go of held agents and takes nothing new.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Callable
from functools import partial

import anyio
from anyio.abc import TaskGroup, TaskStatus

from acp_bridge._os.process.proc import Identity
from acp_bridge._os.race import race
from acp_bridge._runs import foreground, liveness
from acp_bridge._runs.store import lanes, retention, supervisors
from acp_bridge._runs.store.run_store import Store
from acp_bridge._runs.supervisor.entry_call import EntryCall
from acp_bridge._runs.unfinished import end_runs
from acp_bridge._runs.wakeups import Wakeup, wake
from acp_bridge.errors import BridgeError

log = logging.getLogger("acp_bridge.runs")

MAX_RUNS = 100
"""Runs one supervisor takes before it takes no new ones and lets fresh supervisors take
over (a bound on whatever a long-lived interpreter might accumulate)."""
FALLBACK = 1.0
"""Seconds between looks for runs handed over when no wakeup came (a missed one)."""
SIGNALLED = "stopped: the run's supervisor got a signal"


class Supervisor:
    """Runs claimed runs, several at once, in this process."""

    def __init__(
        self, store: Store, me: Identity, env_key: str, signalled: Callable[[], bool]
    ) -> None:
        self.store = store
        self.me = me
        self.env_key = env_key
        self.stopping = False
        self.accepting = True
        """Takes new runs (is listed as accepting), adopts others and holds agents."""
        self._signalled = signalled  # a signal that came before our receiver was listening
        self.calls: set[EntryCall] = set()
        self.taken = 0
        self._tg: TaskGroup | None = None

    @property
    def adopt_env(self) -> str | None:
        """The environment whose runs it adopts as one of its runs ends (None: none)."""
        return self.env_key if self.accepting else None

    @property
    def may_hold(self) -> bool:
        """A supervisor that takes nothing new holds no agent either (nobody would be served)."""
        return self.accepting

    async def run_all(self, claimed: list[str]) -> None:
        foreground.install()  # runs the entries open themselves are recorded too
        self.stopped = anyio.Event()
        self._changed = anyio.Event()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await tg.start(self._signals)
            if self._signalled():
                self._stop_all()
            for run_id in claimed:
                self._start(run_id)
            await self._intake()
            tg.cancel_scope.cancel()

    def _start(self, run_id: str) -> None:
        assert self._tg is not None
        self.taken += 1
        if self.accepting and self.taken >= MAX_RUNS:
            self._stop_accepting()
        call = EntryCall(self, run_id)
        self.calls.add(call)
        self._tg.start_soon(self._run_call, call)

    async def _run_call(self, call: EntryCall) -> None:
        try:
            adopted = await call.run()
        finally:
            self.calls.discard(call)
            self._changed.set()
        if adopted is not None:  # claimed for us as the run ended: run it right away
            self._start(adopted)

    def _stop_accepting(self) -> None:
        self.accepting = False
        try:
            supervisors.stop_accepting(self.store, self.me)
        except BridgeError:  # a run handed over still is ours: the intake ends or runs it
            log.exception("could not leave the list of accepting supervisors")

    async def _signals(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                self._stop_all()

    def _stop_all(self) -> None:
        """Finish every run as cancelled, end the queued ones, hold and take nothing."""
        self.stopping = True
        self.stopped.set()  # lets go of held agents
        self._changed.set()
        if self.accepting:
            self._stop_accepting()
        for call in list(self.calls):
            call.stop(SIGNALLED)

    async def _intake(self) -> None:
        """Start the runs handed to us as their lanes let them; return once idle and off
        the list of accepting supervisors."""
        look = lanes.LOOK_FIRST
        idle_since: float | None = None
        watched: set[str] = set()
        with Wakeup(self.store, [supervisors.wakeup_key(self.me)]) as wakeup:
            while True:
                self._changed = anyio.Event()
                queued = self._take_queued(wakeup, watched)
                if self.calls or queued:
                    idle_since = None
                    timeout = look if queued else FALLBACK
                else:
                    now = anyio.current_time()
                    if idle_since is None:
                        idle_since = now
                        with contextlib.suppress(Exception):  # housekeeping never fails a run
                            retention.maybe_prune(self.store)  # at most hourly
                    timeout = self._idle() - (now - idle_since)
                    if timeout <= 0 and supervisors.retire(self.store, self.me):
                        return
                    timeout = max(timeout, lanes.LOOK_FIRST)
                # A call ending, or a signal, sets _changed: look again at once.
                waited = await race(partial(wakeup.wait, timeout), self._changed.wait)
                if queued and waited.value is False:
                    # Nobody woke us: maybe a supervisor ahead of us was killed. Look for lost
                    # runs (that frees their slots), then wait longer next time.
                    liveness.reap(self.store)
                    look = min(look * 2, lanes.LOOK_MAX)

    def _take_queued(self, wakeup: Wakeup, watched: set[str]) -> list[str]:
        """Start the runs handed to us that may start now (end them, when stopping); the
        ones still waiting for their lanes."""
        store, me = self.store, self.me
        queued = supervisors.queued_for(store.db, me)
        if new := [run_id for run_id in queued if run_id not in watched]:
            wakeup.watch(new)  # the lanes wake a run's own wakeups when it may start
            watched.update(new)
        if self.stopping:
            end_runs(store, me, queued, "stopped before it started", stopped=True)
            return []
        if queued and (claimed := lanes.claim_mine(store, me)):
            wake(store, lanes.heads(store))  # room may be left for the next in line
            for run_id in claimed:
                self._start(run_id)
            queued = [run_id for run_id in queued if run_id not in claimed]
        return queued

    def _idle(self) -> float:
        """Seconds to wait for more runs when there is none left to run."""
        if self.stopping or not self.accepting:
            return 0.0
        value = self.store.setting("supervisor_idle")
        return supervisors.IDLE if value is None else float(value)
