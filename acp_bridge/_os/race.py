"""The one "whichever comes first" helper: run a job until it finishes or something stops it.

Every layer waits this way: a prompt reply against the caller's cancel and the deadline, a
permission decision against the turn's cancellation, a CLI run against Ctrl-C, a smoke case
against the suite's interrupt. Written once, with structured concurrency: the job and its
stoppers run in one task group, and the first to finish cancels the others, so nothing is
left running behind the caller's back.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import anyio

from acp_bridge._records.frozen import FrozenRecord

T = TypeVar("T")

Stopper = Callable[[], Awaitable[object]]


class Raced(FrozenRecord, Generic[T]):
    """How a race ended: the job's value, or which stopper won (``timed_out``: the deadline)."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    value: T | None
    finished: bool
    stopped_by: int | None
    timed_out: bool
    _compared = __slots__ = ("value", "finished", "stopped_by", "timed_out")

    def __init__(
        self,
        value: T | None,
        finished: bool,
        stopped_by: int | None = None,
        timed_out: bool = False,
    ) -> None:
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "finished", finished)
        object.__setattr__(self, "stopped_by", stopped_by)
        object.__setattr__(self, "timed_out", timed_out)


async def race(
    job: Callable[[], Awaitable[T]],
    *stoppers: Stopper | None,
    timeout: float | None = None,
    deadline: float | None = None,
) -> Raced[T]:
    """Run ``job``; if a stopper returns first (or ``timeout`` seconds pass, or the absolute
    ``deadline`` in ``anyio.current_time()`` comes), cancel the job.

    Stoppers are usually ``event.wait``; None is one that never fires (:func:`on_any` of no
    events), and ``stopped_by`` counts it like the others. The job is cancelled, not asked
    to stop: a job that must wind down gracefully is raced against its stopper and then told
    to wind down. An exception of the job propagates as itself, not wrapped in an exception
    group.
    """
    if timeout is not None:
        deadline = min(deadline or math.inf, anyio.current_time() + timeout)
    scope = anyio.CancelScope(deadline=math.inf if deadline is None else deadline)
    if all(stopper is None for stopper in stoppers):
        # Nothing but the deadline can stop it: no watcher tasks (most runs have no cancel).
        with scope:
            return Raced(await job(), finished=True)
        return Raced(None, finished=False, timed_out=True)
    outcome: Raced[T] | None = None
    error: Exception | None = None
    with scope:
        async with anyio.create_task_group() as tg:

            async def watch(index: int, stopper: Stopper) -> None:
                nonlocal outcome
                await stopper()
                if outcome is None:
                    outcome = Raced(None, finished=False, stopped_by=index)
                tg.cancel_scope.cancel()

            for index, stopper in enumerate(stoppers):
                if stopper is not None:
                    tg.start_soon(watch, index, stopper)
            try:
                value = await job()
            except Exception as exc:  # re-raised below, outside the task group
                error = exc
            else:
                if outcome is None:
                    outcome = Raced(value, finished=True)
            tg.cancel_scope.cancel()
    if error is not None:
        try:
            raise error
        finally:  # the frame must not hold its own traceback's exception (a cycle)
            error = None
    return outcome if outcome is not None else Raced(None, finished=False, timed_out=True)


async def wait_event(event: anyio.Event | None) -> None:
    """``event.wait()``, or forever when there is no event (a stopper that never fires)."""
    if event is None:
        await anyio.sleep_forever()
    else:
        await event.wait()


def on_any(*events: anyio.Event | None) -> Stopper | None:
    """A stopper that fires when any of ``events`` is set; None when there are none (for
    :func:`race`: nothing to watch)."""
    present = [event for event in events if event is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0].wait
    return lambda: wait_any(*present)


async def wait_any(*events: anyio.Event | None) -> None:
    """Until any of ``events`` is set (forever when there are none)."""
    present = [event for event in events if event is not None]
    if not present:
        await anyio.sleep_forever()
    if len(present) == 1:
        await present[0].wait()
        return
    async with anyio.create_task_group() as tg:

        async def one(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in present:
            tg.start_soon(one, event)
