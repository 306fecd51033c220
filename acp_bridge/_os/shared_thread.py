"""Blocking calls of one kind, run by one worker thread for everyone asking at once.

Why: runs that start or end together (a fan-out of 64 agents) each made the same kind of
blocking call in a thread hop of its own — a private ``/tmp`` removed, a file's state read.
Each hop takes one of anyio's worker threads (a new one when none is idle: 40 were made in
one batch), and 40 threads doing a few syscalls each, every one releasing and taking back
the GIL the event loop needs, cost far more in futex traffic and context switches than the
calls themselves. Here a call made while another thread is already working on its
:class:`SharedThread` waits for that pass to end and is run in the next one, with every
call queued meanwhile: one hop a pass instead of one a call.

The calls of one pass run one after another, in the order they were asked; an exception is
the caller's own. Per event loop (an ``anyio`` ``RunVar``), as :mod:`.marker_scans`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

import anyio
from anyio.lowlevel import RunVar

T = TypeVar("T")


# Plain classes, not dataclasses: those compile their methods as every command starts.
class _Call:
    __slots__ = ("done", "error", "func", "value")

    def __init__(self, func: Callable[[], object]) -> None:
        self.func = func
        self.done = False
        self.value: object = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.func()
        except BaseException as exc:  # the caller's to raise, in its own task
            self.error = exc
        self.done = True


class _Passes:
    __slots__ = ("ended", "running", "waiting")

    def __init__(self) -> None:
        self.waiting: list[_Call] = []
        self.running = False
        self.ended = anyio.Event()  # set when the running pass ends (a new one each pass)


class SharedThread:
    """One kind of blocking call, shared passes (make one at module level, by name)."""

    __slots__ = ("_passes",)

    def __init__(self, name: str) -> None:
        self._passes: RunVar[_Passes] = RunVar(f"acp_bridge_shared_thread_{name}")

    def _current(self) -> _Passes:
        try:
            return self._passes.get()
        except LookupError:
            passes = _Passes()
            self._passes.set(passes)
            return passes

    async def run(self, func: Callable[[], T]) -> T:
        """``func()`` in a worker thread, in the next pass (which this call starts if no
        pass is running). Its exception propagates. Cancelled while queued: not run;
        once its pass began, the caller waits for the pass (a thread cannot be stopped)."""
        passes = self._current()
        call = _Call(func)
        passes.waiting.append(call)
        try:
            while not call.done:
                if passes.running:
                    await passes.ended.wait()
                else:
                    await _run_pass(passes)
        finally:
            if not call.done and call in passes.waiting:  # cancelled before a pass took it
                passes.waiting.remove(call)
        error, call.error = call.error, None  # no cycle through the traceback's frames
        if error is not None:
            raise error
        return cast(T, call.value)


def _run_all(calls: list[_Call]) -> None:
    for call in calls:
        call.run()


async def _run_pass(passes: _Passes) -> None:
    """One pass for every call waiting now (the caller's among them)."""
    batch, passes.waiting = passes.waiting, []
    passes.running, ended = True, passes.ended
    try:
        # Shielded: a thread cannot be stopped, and the other callers wait on this pass.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_run_all, batch)
    finally:
        for call in batch:  # not run (the hop itself failed): never left waiting
            if not call.done:
                call.error = RuntimeError("a shared worker-thread pass did not run")
                call.done = True
        passes.running, passes.ended = False, anyio.Event()
        ended.set()
