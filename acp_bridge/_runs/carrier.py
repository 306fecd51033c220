"""The heavy half of a supervisor: running claimed runs through the public entry functions.

Imported only once a run may start (the entry code costs ~0.45 s of CPU to import). For each
run: the config is loaded for the caller's directory, the entry is called with ``on_event``
writing events to the store, and beside it three tasks watch for a stop request (doorbell,
plus a look at least every second), record the process groups the entry starts (for the
liveness rule; see :mod:`.procs`), and flush events. The envelope is committed before any
doorbell rings; then the next run of the lane is adopted if it came from the same
environment (see :mod:`.lanes`).

Each run is its stored :class:`~acp_bridge.EntryRequest`, run through
:func:`~acp_bridge.run_entry` with the run's id as the envelope's ``task_id``. Stopping (a
request, a signal, a budget exceeded) sets the entry's ``cancel`` event: the entry ends
gracefully with its partial output (the ACP turn is cancelled the ACP way, a command's group
is ended). A run that does not end within ``HARD_GRACE`` seconds of that is cut off, and its
envelope is written here. Runs the entry opens itself (a tool call inside ``spawn``) are
recorded by the ledger (:mod:`.ledger`), like any foreground run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio
import pydantic
from anyio.abc import TaskStatus

from acp_bridge._entries.table import EntryRequest, run_entry
from acp_bridge._runs import envelopes, lanes, ledger, procs, retention
from acp_bridge._runs.bell import Bell, ring
from acp_bridge._runs.budget import Budget, BudgetGuard
from acp_bridge._runs.procs import Identity
from acp_bridge._runs.recorder import MAX_EVENTS, EventRecorder
from acp_bridge._runs.records import RunRecord
from acp_bridge._runs.store import Store
from acp_bridge.config import load_config
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import BridgeError, ErrorCode
from acp_bridge.events import Event

log = logging.getLogger("acp_bridge.runs")

HARD_GRACE = 30.0
"""Seconds a run asked to stop (or over budget) gets to end before its call is cut off."""
STOP_LOOK = 1.0
"""Seconds between looks for a stop request when no doorbell rang (a missed ring)."""
GROUP_LOOK = 0.25
"""Seconds between looks for new child process groups. The kernel tells an unprivileged
process nothing when its child forks, so this is sampled; the PID-namespace sandbox will make
it unnecessary."""
MAX_CARRIED = 100
"""Runs one supervisor carries before it exits and lets fresh supervisors take over."""


class _Control:
    """How the running entry is asked to stop, and why it was."""

    def __init__(self) -> None:
        self.reason: str | None = None  # "stop" or "budget"
        self.message = ""
        self.cancel = anyio.Event()
        self.scope = anyio.CancelScope()

    def stop(self, reason: str, message: str) -> None:
        if self.reason is None:
            self.reason, self.message = reason, message
        self.cancel.set()  # the entry winds down gracefully, keeping its partial output
        self.scope.deadline = min(self.scope.deadline, anyio.current_time() + HARD_GRACE)


class Carrier:
    """Carries claimed runs, one after another, in this process."""

    def __init__(
        self, store: Store, me: Identity, env_key: str, signalled: Callable[[], bool]
    ) -> None:
        self.store = store
        self.me = me
        self.env_key = env_key
        self.stopping = False
        self._signalled = signalled  # a signal that came before our receiver was listening
        self._control: _Control | None = None
        self._current = ""

    async def carry_all(self, run_id: str) -> None:
        ledger.install()  # runs the entries open themselves are recorded too
        async with anyio.create_task_group() as tg:
            await tg.start(self._signals)
            self.stopping = self._signalled()
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
                if self._current:
                    self.store.request_stop(self._current)
                if self._control is not None:
                    self._control.stop("stop", "stopped: the run's supervisor got a signal")

    async def _carry(self, run_id: str, *, adopt: bool) -> str | None:
        run = self.store.get(run_id)
        if run is None:
            return None
        self._current = run_id
        with Bell(self.store, [run_id]) as bell:
            try:
                result, stopped, guard = await self._run(run, bell)
            except Exception as exc:  # a bug here must still end the run, not lose it
                log.exception("%s: the supervisor failed", run_id)
                error = f"the run's supervisor failed: {type(exc).__name__}: {exc}"
                result = envelopes.failed(run, error, ErrorCode.INTERNAL_ERROR)
                stopped, guard = False, BudgetGuard(Budget())
        self._current, self._control = "", None
        outcome = envelopes.outcome(result, stopped=stopped, tokens=guard.tokens, cost=guard.cost)
        written, adopted = lanes.finish(
            self.store, run_id, outcome, self.me, adopt_env=self.env_key if adopt else None
        )
        if not written:
            log.warning("%s: ended elsewhere meanwhile; this outcome was not recorded", run_id)
        ring(self.store, [run_id, *([adopted] if adopted else []), *lanes.heads(self.store)])
        return adopted

    async def _run(self, run: RunRecord, bell: Bell) -> tuple[SubtaskResult, bool, BudgetGuard]:
        """Run ``run``'s entry; its envelope, whether it was asked to stop, and its usage."""
        group_max = self.store.group_budget(run.group) if run.group else (None, None)
        guard = BudgetGuard(
            Budget(run.max_tokens, run.max_cost),
            group=run.group,
            group_budget=Budget(*group_max),
            spent_by_others=lambda: self.store.group_spent(run.group or "", besides=run.id),
        )
        if run.stop_requested is not None or self.stopping:
            stopped = envelopes.failed(run, "stopped before it started", ErrorCode.CANCELLED)
            return stopped, True, guard
        if reason := guard.spent_before_start():
            return envelopes.failed(run, reason, ErrorCode.BUDGET), False, guard

        control = self._control = _Control()
        max_events = int(self.store.setting("max_events") or MAX_EVENTS)
        recorder = EventRecorder(
            self.store, run.id, already=run.events_count, max_events=max_events, bell_name=bell.name
        )
        recorder.add({"kind": "status", "task_id": run.id, "elapsed": 0, "phase": "running",
                      "supervisor_pid": self.me.pid})  # fmt: skip

        def on_event(event: Event) -> None:
            recorder.add(event.to_dict())
            if event.kind == "status" and event.data.get("session_id"):
                recorder.note(session_id=str(event.data["session_id"]))
            elif event.kind == "usage":
                reason = guard.observe(event.data)
                recorder.note(tokens=guard.tokens, cost=guard.cost)
                if reason:
                    control.stop("budget", reason)

        result: SubtaskResult | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(recorder.run)
            tg.start_soon(self._watch_stop, run.id, bell, control)
            tg.start_soon(self._track_groups, run.id)
            with control.scope:
                result = await self._call(run, on_event, control)
            tg.cancel_scope.cancel()
        recorder.flush()  # every event is in the store before the envelope is

        if result is None:  # cut off after HARD_GRACE: stopped, or over budget
            code = ErrorCode.BUDGET if control.reason == "budget" else ErrorCode.CANCELLED
            result = envelopes.failed(run, control.message or "stopped", code)
        if control.reason == "budget":
            result = envelopes.over_budget(result, control.message)
        elif (reason := guard.observe(result.meta.usage or {})) and result.status == "done":
            # The agent reported its usage only as the turn ended: too late to cancel.
            result = envelopes.over_budget(result, f"{reason} (reported as the turn ended)")
        return result, control.reason == "stop", guard

    async def _call(
        self, run: RunRecord, on_event: Callable[[Event], None], control: _Control
    ) -> SubtaskResult:
        """The entry's envelope (entries never raise; reading the request or config may)."""
        with contextlib.suppress(OSError):  # relative paths as the caller meant them
            os.chdir(run.caller_cwd)
        try:
            request = EntryRequest.model_validate({**(run.request or {}), "task_id": run.id})
        except pydantic.ValidationError as exc:
            error = f"the run's stored request is not valid: {exc}"
            return envelopes.failed(run, error, ErrorCode.CONFIG_ERROR)
        try:
            config = load_config(
                Path(run.config_path) if run.config_path else None, cwd=Path(run.caller_cwd)
            )
        except BridgeError as exc:
            return envelopes.failed(run, str(exc), exc.code)
        with ledger.carrying(run.id):
            return await run_entry(request, config=config, on_event=on_event, cancel=control.cancel)

    async def _watch_stop(self, run_id: str, bell: Bell, control: _Control) -> None:
        while not self.store.stop_requested(run_id):
            await bell.wait(STOP_LOOK)
        control.stop("stop", "stopped on request")

    async def _track_groups(self, run_id: str) -> None:
        known: set[Identity] = set()
        while True:
            new = [leader for leader in procs.group_leaders() if leader not in known]
            if new:
                self.store.add_groups(run_id, new)
                known.update(new)
            await anyio.sleep(GROUP_LOOK)
