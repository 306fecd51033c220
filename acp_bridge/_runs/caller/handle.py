"""Runs from Python, from this process or any other: a :class:`RunHandle` is just a run id
and a store. Every async method has a ``_sync`` twin that needs no event loop::

    handle = open_run("sub_7f3a9c1e2b4d")
    result = handle.wait_sync(timeout=60)   # the SubtaskResult, or None if still running
    for item in handle.events_sync(follow=True):
        print(item.seq, item.event.kind)

Reading runs is light on purpose (``acp-bridge wait`` and ``ps`` start in tens of
milliseconds): this module imports neither pydantic nor the entry code, until an envelope
is turned into a :class:`~acp_bridge.SubtaskResult` or a lost run's envelope is written.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from acp_bridge._runs import liveness
from acp_bridge._runs.held_agents import end_hold
from acp_bridge._runs.store import lanes
from acp_bridge._runs.store.listing import json_texts
from acp_bridge._runs.store.run_records import RunRecord, RunStatus
from acp_bridge._runs.store.run_store import Store, open_store
from acp_bridge._runs.wakeups import wake
from acp_bridge._runs.watch import Watch, get_checked
from acp_bridge.events import Event

if TYPE_CHECKING:
    from acp_bridge._runs.run_options import RunOptions
    from acp_bridge.config import LoadedConfig
    from acp_bridge.envelope import SubtaskResult


class RunEvent(NamedTuple):
    """One live event of a run, as recorded: ``seq`` counts from 1 in the order they came."""

    seq: int
    event: Event


def _deadline(timeout: float | None) -> float:
    return float("inf") if timeout is None else time.monotonic() + timeout


def _result(run: RunRecord) -> SubtaskResult | None:
    if run.envelope is None:
        return None
    from acp_bridge.envelope import SubtaskResult

    return SubtaskResult.model_validate(run.envelope)


class RunHandle:
    """A run, by id. Cheap to make; everything it tells is read from the store afresh."""

    def __init__(self, run_id: str, store: str | Path | None = None) -> None:
        self.id = run_id
        self.store_path = Path(store) if store is not None else None

    def __repr__(self) -> str:
        return f"RunHandle({self.id!r})"

    @property
    def _store(self) -> Store:
        return open_store(self.store_path)

    def record(self) -> RunRecord:
        """The run as stored now, envelope included once it ended (a run whose supervisor
        died is found ``lost`` here)."""
        return get_checked(self._store, self.id)

    @property
    def status(self) -> RunStatus:
        return self.record().status

    @overload
    async def wait(self, timeout: None = None) -> SubtaskResult: ...
    @overload
    async def wait(self, timeout: float) -> SubtaskResult | None: ...

    async def wait(self, timeout: float | None = None) -> SubtaskResult | None:
        """The run's envelope once it ended; None if ``timeout`` seconds passed first."""
        return _result((await wait_all([self.id], timeout=timeout, store=self.store_path))[0])

    @overload
    def wait_sync(self, timeout: None = None) -> SubtaskResult: ...
    @overload
    def wait_sync(self, timeout: float) -> SubtaskResult | None: ...

    def wait_sync(self, timeout: float | None = None) -> SubtaskResult | None:
        return _result(wait_all_sync([self.id], timeout=timeout, store=self.store_path)[0])

    async def stop(self) -> RunStatus:
        """Ask the run to stop: graceful cancel, envelope ``cancelled`` with its partial
        output. Does not wait; the status right after asking."""
        return stop_run(self.id, store=self.store_path).status

    def stop_sync(self) -> RunStatus:
        return stop_run(self.id, store=self.store_path).status

    async def send(
        self,
        text: str,
        *,
        timeout: float | None = None,
        options: RunOptions | None = None,
        config: LoadedConfig | None = None,
    ) -> RunHandle:
        """Queue ``text`` as the next turn in this run's ACP session (``acp-bridge send``):
        a follow-up, a run of its own, whose handle this returns at once. It is served by
        the agent still held from this run, else through ``session/resume`` or
        ``session/load``, else it fails with a clear refusal. ``options``: its budget;
        :class:`~acp_bridge.ConfigError` when there is no session to continue."""
        import anyio

        def call() -> RunHandle:  # it reads the config and may fork a supervisor
            return self.send_sync(text, timeout=timeout, options=options, config=config)

        return await anyio.to_thread.run_sync(call)

    def send_sync(
        self,
        text: str,
        *,
        timeout: float | None = None,
        options: RunOptions | None = None,
        config: LoadedConfig | None = None,
    ) -> RunHandle:
        from acp_bridge._runs.caller.send import queue_follow_up

        follow_up, store = queue_follow_up(
            self.id, text, timeout=timeout, options=self._options(options), config=config
        )
        return RunHandle(follow_up, store)

    def _options(self, options: RunOptions | None) -> RunOptions:
        """``options`` on this handle's store (the follow-up is recorded beside its run)."""

        from acp_bridge._runs.run_options import RunOptions

        options = options or RunOptions()
        if options.store is None and self.store_path is not None:
            options = options.replaced(store=self.store_path)
        return options

    async def events(self, *, follow: bool = False, after: int = 0) -> AsyncIterator[RunEvent]:
        """The run's events from the start (or after number ``after``); with ``follow``, then
        live ones as they are recorded, until the run ends. Foreground runs record none."""
        store = self._store
        if not follow:
            for item in replay(store, self.id, after):
                yield item
            return
        with Watch(store, [self.id]) as watch:
            while True:
                finished = watch.look()[0].finished  # before reading: no event can slip by
                for item in replay(store, self.id, after):
                    after = item.seq
                    yield item
                if finished:
                    return
                await watch.wait(float("inf"))

    def events_sync(self, *, follow: bool = False, after: int = 0) -> Iterator[RunEvent]:
        store = self._store
        if not follow:
            yield from replay(store, self.id, after)
            return
        with Watch(store, [self.id]) as watch:
            while True:
                finished = watch.look()[0].finished
                for item in replay(store, self.id, after):
                    after = item.seq
                    yield item
                if finished:
                    return
                watch.wait_sync(float("inf"))


def replay(store: Store, run_id: str, after: int = 0) -> Iterator[RunEvent]:
    """The recorded events of ``run_id`` numbered above ``after``, in order."""
    while batch := store.events(run_id, after):
        for seq, text in batch:
            after = seq
            data = json.loads(text)
            kind, task_id = data.pop("kind", "warning"), data.pop("task_id", run_id)
            elapsed = float(data.pop("elapsed", 0.0))
            yield RunEvent(seq, Event(kind, task_id, elapsed, data))


async def wait_all(
    run_ids: Sequence[str], *, timeout: float | None = None, store: str | Path | None = None
) -> list[RunRecord]:
    """Every run once ended, or as they are after ``timeout`` seconds."""
    deadline = _deadline(timeout)
    with Watch(open_store(store), run_ids) as watch:
        while True:
            runs = watch.look()
            remaining = deadline - time.monotonic()
            if all(run.finished for run in runs) or remaining <= 0:
                return runs
            await watch.wait(remaining)


def wait_all_sync(
    run_ids: Sequence[str], *, timeout: float | None = None, store: str | Path | None = None
) -> list[RunRecord]:
    """:func:`wait_all` without an event loop. Not the sync helper (``_entries/sync.py``):
    ``acp-bridge wait`` must start without anyio, so this waits on the wakeup directly."""
    deadline = _deadline(timeout)
    with Watch(open_store(store), run_ids) as watch:
        while True:
            runs = watch.look()
            remaining = deadline - time.monotonic()
            if all(run.finished for run in runs) or remaining <= 0:
                return runs
            watch.wait_sync(remaining)


def stop_run(run_id: str, *, store: str | Path | None = None) -> RunRecord:
    """Stop a run: a queued one ends ``cancelled`` here and now; a running one is asked to
    (its supervisor cancels the entry gracefully); an ended one whose agent is held for a
    follow-up has its hold ended. A foreground run cannot be stopped from here (its caller
    runs it: ``ConfigError``). Returns the run as it is now."""
    db = open_store(store)
    run = get_checked(db, run_id)
    if run.finished:
        if end_hold(db, run_id):
            wake(db, [run_id])  # the supervisor holding it closes the agent, frees the slot
        return run
    if not run.finished and not run.detached:
        from acp_bridge.errors import ConfigError

        pid = run.supervisor.pid if run.supervisor else "?"
        raise ConfigError(
            f"run {run_id} is a foreground run of process {pid}: stop it there (Ctrl-C); "
            "only detached runs can be stopped from elsewhere"
        )
    if run.status == "queued":
        from acp_bridge._runs.unfinished import ended
        from acp_bridge.errors import ErrorCode

        outcome = ended(run, "stopped before it started", ErrorCode.CANCELLED, stopped=True)
        with db.write() as conn:
            written = db.finish(conn, run_id, outcome, only_queued=True)
        if written:
            wake(db, [run_id, *lanes.heads(db)])  # the run behind it may be the head now
            return get_checked(db, run_id)
        run = get_checked(db, run_id)  # claimed meanwhile: stop it running
    if run.status == "running":
        db.request_stop(run_id)
        wake(db, [run_id])
    return get_checked(db, run_id)


def open_run(run_id: str, *, store: str | Path | None = None) -> RunHandle:
    """A handle to an existing run; :class:`~acp_bridge.ConfigError` if there is none."""
    get_checked(open_store(store), run_id)
    return RunHandle(run_id, store)


def list_runs(
    *, store: str | Path | None = None, include_ended: bool = True, limit: int | None = None
) -> list[RunRecord]:
    """Runs, newest first, lost ones found and marked first (``ps``)."""
    db = open_store(store)
    liveness.reap(db)
    return db.runs(active_only=not include_ended, limit=limit)


def list_run_table(*, store: str | Path | None = None, include_ended: bool = True) -> list[Any]:
    """:func:`list_runs` as the rows of ``ps``'s table (``TABLE_COLUMNS``), no record made."""
    db = open_store(store)
    liveness.reap(db)
    return db.table_rows(active_only=not include_ended)


def list_run_dicts(
    *, store: str | Path | None = None, include_ended: bool = True, limit: int | None = None
) -> list[dict[str, Any]]:
    """:func:`list_runs` as JSON data (``ps --json``), made straight from the rows."""
    db = open_store(store)
    liveness.reap(db)
    return db.run_dicts(active_only=not include_ended, limit=limit)


def list_run_json(
    encode: Callable[[dict[str, Any]], str],
    *,
    store: str | Path | None = None,
    include_ended: bool = True,
    limit: int | None = None,
) -> list[str]:
    """:func:`list_run_dicts` as JSON texts (``ps --json``): an ended run's as stored when it
    ended, the others' through ``encode`` (see :mod:`~acp_bridge._runs.store.listing`)."""
    db = open_store(store)
    liveness.reap(db)
    return json_texts(db.db, encode, active_only=not include_ended, limit=limit)
