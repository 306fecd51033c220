"""Detached runs from Python: start one, then wait for it, stop it, follow its events, from
this process or any other (a handle is just a run id and a store)::

    handle = await start("acp_spawn", "demo", "Reply with exactly OK")
    run = await handle.wait(timeout=60)
    run.status, run.envelope          # "done", the SubtaskResult envelope as JSON data

``start`` takes the entry's own positional and keyword arguments (JSON values only: they
cross to the supervisor through the store) and :class:`RunOptions` for the run itself. Every
async method has a ``_sync`` twin that needs no event loop. Nothing here imports pydantic, so
a ``wait`` or ``ps`` process starts in tens of milliseconds.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from acp_bridge._runs import envelopes, lanes, liveness
from acp_bridge._runs.bell import ring
from acp_bridge._runs.budget import Budget
from acp_bridge._runs.launch import env_key, launch
from acp_bridge._runs.records import NewRun, Outcome, Run, RunStatus
from acp_bridge._runs.store import Store, open_store
from acp_bridge._runs.watch import Watch, get_checked
from acp_bridge.errors import ConfigError

Entry = Literal["acp_spawn", "bash", "spawn"]
_ARITY: dict[str, int] = {"acp_spawn": 2, "bash": 1, "spawn": 2}
_LOCAL_ONLY = ("on_event", "cancel", "config", "registry", "permission_hook")


@dataclass(frozen=True)
class RunOptions:
    """How a detached run is queued and limited (the entry's own options go to :func:`start`)."""

    lane: str | None = None
    """Default: ``agent:NAME`` for acp_spawn, else ``entry:ENTRY``."""
    max_concurrent: int | None = None
    """This lane's limit (a profile's ``max_concurrent``); stored, applies to later runs too."""
    global_max_concurrent: int | None = None
    """The limit over all lanes (``runs.max_concurrent``); stored likewise."""
    budget: Budget = field(default_factory=Budget)
    group: str | None = None
    group_budget: Budget | None = None
    """The group's shared total; stored for the group (None: keep what is stored)."""
    config_path: str | Path | None = None
    """The config file (default: the usual search from the caller's directory)."""
    store: str | Path | None = None
    """The run store (default: ``$ACP_BRIDGE_RUNS_DB`` or the state directory)."""

    def __post_init__(self) -> None:
        for name in ("max_concurrent", "global_max_concurrent"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ConfigError(f"{name} must be a positive whole number, got {value!r}")
        if self.lane == lanes.GLOBAL:
            raise ConfigError(f"{lanes.GLOBAL!r} is not a lane name (it means all lanes)")


def start_sync(
    entry: Entry, *args: Any, options: RunOptions | None = None, **kwargs: Any
) -> RunHandle:
    """Queue a run of ``entry(*args, **kwargs)`` and start its detached supervisor; returns
    at once (the run is ``queued``). Raises :class:`ConfigError` for arguments that cannot
    cross to another process and :class:`~acp_bridge.errors.SpawnError` if the supervisor
    cannot start."""
    options = options or RunOptions()
    if entry not in _ARITY:
        raise ConfigError(f"unknown entry {entry!r}; allowed: {', '.join(sorted(_ARITY))}")
    if len(args) != _ARITY[entry]:
        raise ConfigError(f"{entry} takes {_ARITY[entry]} positional arguments, got {len(args)}")
    if local := [name for name in _LOCAL_ONLY if name in kwargs]:
        raise ConfigError(
            f"{', '.join(local)}: cannot cross to a detached run (read its events with "
            "RunHandle.events(), stop it with RunHandle.stop(), name its config with "
            "RunOptions.config_path)"
        )
    caller_cwd = str(Path.cwd())
    # Absolute now: the supervisor may carry runs from other directories too.
    kwargs["cwd"] = os.path.normpath(os.path.join(caller_cwd, str(kwargs.get("cwd") or ".")))  # noqa: PTH118
    spec = {"args": list(args), "kwargs": kwargs}
    try:
        json.dumps(spec)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"arguments of a detached run must be JSON values: {exc}") from exc
    agent = str(args[0]) if entry == "acp_spawn" else None
    lane = options.lane or lanes.lane_for(entry, agent)
    limits = {}
    if options.max_concurrent is not None:
        limits[lane] = options.max_concurrent
    if options.global_max_concurrent is not None:
        limits[lanes.GLOBAL] = options.global_max_concurrent
    group_budget = None
    if options.group is not None and options.group_budget is not None:
        group_budget = (options.group_budget.max_tokens, options.group_budget.max_cost)
    config_path = options.config_path
    store = open_store(options.store)
    run = NewRun(
        id=f"sub_{os.urandom(6).hex()}",  # the envelope's task_id format
        entry=entry,
        agent=agent,
        task=str(args[1] if entry == "acp_spawn" else args[0]),
        cwd=str(kwargs["cwd"]),
        caller_cwd=caller_cwd,
        spec=spec,
        config_path=None if config_path is None else str(Path(caller_cwd, config_path)),
        lane=lane,
        group=options.group,
        env_key=env_key(),
        max_tokens=options.budget.max_tokens,
        max_cost=options.budget.max_cost,
    )
    supervisor = launch(store.path, run.id, store.logs_dir / f"{run.id}.log")
    store.create(run, supervisor, limits=limits, group_budget=group_budget)
    return RunHandle(run.id, store.path)


async def start(
    entry: Entry, *args: Any, options: RunOptions | None = None, **kwargs: Any
) -> RunHandle:
    """:func:`start_sync` off the event loop (it waits a few ms for a shell to fork)."""
    import anyio

    def call() -> RunHandle:
        return start_sync(entry, *args, options=options, **kwargs)

    return await anyio.to_thread.run_sync(call)


def _deadline(timeout: float | None) -> float:
    return float("inf") if timeout is None else time.monotonic() + timeout


class RunHandle:
    """A detached run, by id. Cheap to make; every property reads the store afresh."""

    def __init__(self, run_id: str, store: str | Path | None = None) -> None:
        self.id = run_id
        self.store_path = Path(store) if store is not None else None

    def __repr__(self) -> str:
        return f"RunHandle({self.id!r})"

    @property
    def _store(self) -> Store:
        return open_store(self.store_path)

    def run(self) -> Run:
        """The run now, with its envelope once it ended (a lost run is found lost here)."""
        return get_checked(self._store, self.id)

    @property
    def status(self) -> RunStatus:
        return self.run().status

    async def wait(self, timeout: float | None = None) -> Run:
        """The run once it ended, or as it is when ``timeout`` seconds passed (check
        ``run.finished``)."""
        return (await wait_all([self.id], timeout=timeout, store=self.store_path))[0]

    def wait_sync(self, timeout: float | None = None) -> Run:
        return wait_all_sync([self.id], timeout=timeout, store=self.store_path)[0]

    async def stop(self) -> Run:
        """Ask the run to stop (graceful cancel, envelope ``cancelled``); does not wait."""
        return stop_run(self.id, store=self.store_path)

    def stop_sync(self) -> Run:
        return stop_run(self.id, store=self.store_path)

    async def events(
        self, *, follow: bool = False, after: int = 0
    ) -> AsyncIterator[dict[str, Any]]:
        """The run's events from the start (or after event number ``after``); with
        ``follow``, then live ones until the run ends. Each has ``seq``, its number."""
        store = self._store
        if not follow:
            for item in _replay(store, self.id, after):
                yield item
            return
        with Watch(store, [self.id]) as watch:
            while True:
                finished = watch.look()[0].finished  # before reading: no event can slip by
                for item in _replay(store, self.id, after):
                    after = item["seq"]
                    yield item
                if finished:
                    return
                await watch.wait(float("inf"))

    def events_sync(self, *, follow: bool = False, after: int = 0) -> Iterator[dict[str, Any]]:
        store = self._store
        if not follow:
            yield from _replay(store, self.id, after)
            return
        with Watch(store, [self.id]) as watch:
            while True:
                finished = watch.look()[0].finished
                for item in _replay(store, self.id, after):
                    after = item["seq"]
                    yield item
                if finished:
                    return
                watch.wait_sync(float("inf"))


def _replay(store: Store, run_id: str, after: int) -> Iterator[dict[str, Any]]:
    while batch := store.events(run_id, after):
        for seq, text in batch:
            after = seq
            yield {"seq": seq, **json.loads(text)}


async def wait_all(
    run_ids: Sequence[str], *, timeout: float | None = None, store: str | Path | None = None
) -> list[Run]:
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
) -> list[Run]:
    deadline = _deadline(timeout)
    with Watch(open_store(store), run_ids) as watch:
        while True:
            runs = watch.look()
            remaining = deadline - time.monotonic()
            if all(run.finished for run in runs) or remaining <= 0:
                return runs
            watch.wait_sync(remaining)


def stop_run(run_id: str, *, store: str | Path | None = None) -> Run:
    """Stop a run: a queued one ends ``cancelled`` here and now; a running one is asked to
    (its supervisor cancels the turn gracefully). Returns the run as it is now."""
    db = open_store(store)
    run = get_checked(db, run_id)
    if run.status == "queued":
        envelope = envelopes.failed(run, "stopped before it started", envelopes.CANCELLED)
        outcome = Outcome("cancelled", envelope, envelope["summary"], envelopes.CANCELLED)
        with db.write() as conn:
            written = db.finish(conn, run_id, outcome, only_queued=True)
        if written:
            ring(db, [run_id, *lanes.heads(db)])  # the run behind it may be the head now
            return get_checked(db, run_id)
        run = get_checked(db, run_id)  # claimed meanwhile: stop it running
    if run.status == "running":
        db.request_stop(run_id)
        ring(db, [run_id])
    return get_checked(db, run_id)


def open_run(run_id: str, *, store: str | Path | None = None) -> RunHandle:
    """A handle to an existing run; :class:`~acp_bridge._runs.watch.UnknownRunError` if none."""
    get_checked(open_store(store), run_id)
    return RunHandle(run_id, store)


def list_runs(
    *, store: str | Path | None = None, include_ended: bool = True, limit: int | None = None
) -> list[Run]:
    """Runs, newest first, lost ones found and marked first (``ps``)."""
    db = open_store(store)
    liveness.reap(db)
    return db.runs(active_only=not include_ended, limit=limit)
