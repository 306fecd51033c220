"""Foreground runs in the run store: the reporter every entry reports to
(docs/explanation/runs.md, the run store).

A run whose caller waits for its envelope (``acp-bridge run`` without ``--detach``, a host
calling ``acp_bridge.acp_spawn``, a smoke case, a tool call inside ``ask``) is recorded
here: a row, ``running`` in the caller's own process, written from a worker thread beside
the run (:mod:`acp_bridge._entries.reporting`); then its envelope, committed before the
caller gets it, and anyone waiting on it woken. So ``ps`` lists
it, ``wait`` and ``show`` work on it from any process, and if the caller is killed the run is
found ``lost`` like any other. What a foreground record does not have: its events (``logs``
is for detached runs), a stop from elsewhere (its caller owns it: Ctrl-C there), lanes and
budgets (they belong to runs of the run layer).

Cost, measured with ``benchmarks/cold_start.py``: the thread does the SQLite import, the
store's opening and the insert while the agent starts up; the caller waits only for the
final write (well under a millisecond). A config with ``runs.record: false`` turns it off.

A report never fails a run: a store it cannot write is logged, and the run goes on.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from acp_bridge._entries.reporting import RunStart, install_reporter
from acp_bridge.config import LoadedConfig
from acp_bridge.envelope import Meta, SubtaskResult, failed
from acp_bridge.errors import ErrorCode

if TYPE_CHECKING:  # imported on first use: SQLite is the begin thread's cost, not the caller's
    from acp_bridge._os.process.proc import Identity
    from acp_bridge._runs.store.run_records import NewRun
    from acp_bridge._runs.store.run_store import Store

log = logging.getLogger("acp_bridge.runs")

_recorded_elsewhere: ContextVar[str | None] = ContextVar(
    "acp_bridge_run_recorded_elsewhere", default=None
)


@contextlib.contextmanager
def recorded_elsewhere(run_id: str) -> Iterator[None]:
    """Inside: the run ``run_id`` is recorded by whoever runs it in this process (a
    supervisor, a batch), not by the reporter, which leaves that one run out; runs it opens
    are recorded as usual."""
    token = _recorded_elsewhere.set(run_id)
    try:
        yield
    finally:
        _recorded_elsewhere.reset(token)


class StoreReporter:
    """Records every run of this process in the run store (one connection per store path,
    shared by the worker threads that begin records and the loop that ends them)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._stores: dict[tuple[int, Path], Store] = {}
        self._unwritten: list[_Record] = []
        """Records whose ``begin`` is waiting for :attr:`lock`: the next thread to take it
        writes them all (guarded by :attr:`_queue_lock`, never held while writing)."""
        self._queue_lock = threading.Lock()
        self._writing = False

    def record(self, run: RunStart) -> _Record | None:
        if run.task_id == _recorded_elsewhere.get():
            return None
        return _Record(self, run)

    def store(self, path: Path) -> Store:
        """The shared connection to the store at ``path`` (call with :attr:`lock` held)."""
        from acp_bridge._runs.store.run_store import Store

        key = (os.getpid(), path)  # a forked child opens its own
        found = self._stores.get(key)
        if found is None:
            found = self._stores[key] = Store(path, any_thread=True)
        return found

    def write_begun(self, record: _Record) -> None:
        """Have ``record``'s row written: by this thread, or by the one writing already.

        Why not each thread its own row, in turn on :attr:`lock`: 64 runs starting at once
        held 40 worker threads waiting for it (the first one opening the store), each
        holding a token of anyio's shared thread limiter (40 in all), and every other
        thread hop of those runs (the files baseline, the sandbox's /tmp) queued behind
        them for the first ~0.3 s of the batch. Now one thread writes every row queued
        while it writes; the others return at once. :meth:`_Record.ended` waits for the
        row (:meth:`write_queued`)."""
        with self._queue_lock:
            self._unwritten.append(record)
            if self._writing:
                return  # the writer takes it before it stops
            self._writing = True
        try:
            while self.write_queued():
                pass
        finally:
            with self._queue_lock:
                self._writing = False
            if self._unwritten:  # queued between the last pass and the flag cleared
                self.write_queued()

    def write_queued(self) -> bool:
        """Write every row queued now (and wait for a pass under way); whether any were."""
        from acp_bridge._runs.store import retention

        with self.lock:
            with self._queue_lock:
                batch, self._unwritten = self._unwritten, []
            stores: dict[int, Store] = {}
            for queued in batch:
                try:
                    store = queued.write_row()
                    stores[id(store)] = store
                    queued.begun = True
                except Exception as exc:  # never fail a run for its record
                    queued.skip = True
                    log.warning("%s: not recorded in the run store: %s", queued.run.task_id, exc)
            for store in stores.values():
                try:
                    retention.maybe_prune(store)
                except Exception as exc:
                    log.warning("run store not pruned: %s", exc)
        return bool(batch)

    def close(self) -> None:
        with self.lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()


class _Record:
    """One foreground run's row."""

    def __init__(self, reporter: StoreReporter, run: RunStart) -> None:
        self.reporter = reporter
        self.run = run
        self.path: Path | None = None
        self.begun = False
        self.skip = False
        self._row: tuple[NewRun, Mapping[str, str | None] | None] | None = None

    def begin(self, config: LoadedConfig | None) -> None:
        if config is not None and not config.config.runs.record:
            self.skip = True
            return
        try:
            self._prepare(config)
        except Exception as exc:  # never fail the run for its record
            self.skip = True
            log.warning("%s: not recorded in the run store: %s", self.run.task_id, exc)
            return
        self.reporter.write_begun(self)  # sets begun, or skip

    def write_row(self) -> Store:
        """Insert the prepared row (with :attr:`StoreReporter.lock` held); its store."""
        assert self.path is not None and self._row is not None
        new, settings = self._row
        store = self.reporter.store(self.path)
        store.create(new, _own_identity(), detached=False, settings=settings)
        return store

    def _prepare(self, config: LoadedConfig | None) -> None:
        # wakeup, budget and unfinished only for ended(): imported now, in this worker thread,
        # because ended() is on the caller's critical path (they cost a cold run ~3 ms).
        from acp_bridge._os.process import proc
        from acp_bridge._runs import budget, unfinished, wakeups
        from acp_bridge._runs.store import lanes, retention, rules
        from acp_bridge._runs.store.run_records import NewRun
        from acp_bridge._runs.store.run_store import default_path

        del wakeups, budget, unfinished, proc, retention

        run = self.run
        self.path = default_path().absolute()
        request = {"entry": run.entry, "task": run.task, "agent": run.agent, "cwd": run.cwd}
        new = NewRun(
            id=run.task_id, entry=run.entry, agent=run.agent, task=run.task, cwd=run.cwd,
            caller_cwd=os.getcwd(), request=request,  # noqa: PTH109
            config_path=str(config.path) if config and config.path else None,
            lane=lanes.lane_for(run.entry, run.agent), group=None, env_key="",
            batch_id=run.batch_id,
        )  # fmt: skip
        settings = rules.store_settings(config.config.runs) if config else None
        self._row = new, settings

    def ended(self, result: SubtaskResult, *, stopped: bool = False) -> None:
        if self._row is None and not self.skip:
            self.begin(None)  # the run failed before its config was read: record it anyway
        if self._row is not None and not self.begun and not self.skip:
            # Its row queued for another thread's pass (whether begun here or before):
            # written first, else the end found no row, and the row written after it stayed
            # `running` until a reader found it `lost` (11 642 of 100 000 refused tasks).
            self.reporter.write_queued()
        if self.skip:
            return
        try:
            self._finish(result, stopped)
        except Exception as exc:
            log.warning("%s: envelope not recorded in the run store: %s", self.run.task_id, exc)

    def _finish(self, result: SubtaskResult, stopped: bool) -> None:
        from acp_bridge._runs.budget import usage_figures
        from acp_bridge._runs.unfinished import outcome
        from acp_bridge._runs.wakeups import wake

        assert self.path is not None
        tokens, cost = usage_figures(result.meta.usage or {})
        ended = outcome(result, stopped=stopped, tokens=tokens, cost=cost)
        with self.reporter.lock:
            store = self.reporter.store(self.path)
            with store.write() as db:
                store.finish(db, self.run.task_id, ended, supervisor=_own_identity())
            wake(store, [self.run.task_id])

    def abandoned(self) -> None:
        run = self.run
        meta = Meta(entry=run.entry, agent=run.agent)
        error = "the caller cancelled the run before it ended"
        self.ended(failed(error, ErrorCode.CANCELLED, task_id=run.task_id, meta=meta), stopped=True)


_identity: tuple[int, Identity] | None = None


def _own_identity() -> Identity:
    """This process's identity (pid, start time, boot), read once per process (a forked
    child reads its own): every record has it, twice."""
    global _identity
    from acp_bridge._os.process import proc

    known = _identity
    if known is None or known[0] != os.getpid():
        known = _identity = (os.getpid(), proc.own_identity())
    return known[1]


_reporter = StoreReporter()


def record_run(run: RunStart) -> _Record:
    """A record of ``run`` in the run store, whether the reporter is installed or leaves the
    run out: a batch records each of its tasks itself, with where it ran (see
    ``acp_bridge._batch``)."""
    return _Record(_reporter, run)


def install() -> None:
    """Record every run of this process in the run store (idempotent). Its connections
    close at exit: the last one to close folds SQLite's write-ahead log back into the store
    (a process that ends without the interpreter's teardown runs the atexit handlers)."""
    global _closes_at_exit
    install_reporter(_reporter)
    if not _closes_at_exit:
        atexit.register(close)
        _closes_at_exit = True


_closes_at_exit = False


def close() -> None:
    """Close the reporter's connections (tests; hosts that switch stores)."""
    _reporter.close()
