"""Whether any process still carries a group's marker: one ``/proc`` pass for every group
asking at once.

Why: every process group the bridge ends is swept for what outlived its leader — the
processes that carry its marker (reaper.py, procgroup.py). Finding them reads every
process's environment. Runs that end together (a fan-out of 64 agents) each paid a pass
over every process of the machine, their own agents included, in a worker thread holding
the GIL the event loop needed: 64 passes where one would do. Here a group that asks while
a pass runs waits for it to end and shares the next pass with every group that asked
meanwhile; a pass always begins after the question, so it sees every process alive when it
was asked. A marker found is then swept the full way (``reaper.kill_marked``: signals,
rescans for children forked meanwhile, waits), as before; the usual answer is "none".

Per event loop (an ``anyio`` ``RunVar``): the bridge may run several loops in threads.
"""

from __future__ import annotations

import functools

import anyio
from anyio.lowlevel import RunVar

from acp_bridge._os.reaper import markers_present


# Plain classes, not dataclasses: those compile their methods as every command starts.
class _Question:
    __slots__ = ("answered", "error", "marker", "present")

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.answered = anyio.Event()
        self.present = False
        self.error: Exception | None = None


class _Passes:
    __slots__ = ("ended", "running", "waiting")

    def __init__(self) -> None:
        self.waiting: list[_Question] = []
        self.running = False
        self.ended = anyio.Event()  # set when the running pass ends (a new one each pass)


_passes: RunVar[_Passes] = RunVar("acp_bridge_marker_passes")


def _current() -> _Passes:
    try:
        return _passes.get()
    except LookupError:
        passes = _Passes()
        _passes.set(passes)
        return passes


async def marker_present(name: str, marker: str) -> bool:
    """Whether a live process other than this one carries ``name=marker``, read by a pass
    over ``/proc`` that began after this call (shared with every caller waiting with it).
    OSError of the pass propagates."""
    passes = _current()
    question = _Question(marker)
    passes.waiting.append(question)
    try:
        while not question.answered.is_set():
            if passes.running:
                await passes.ended.wait()
            else:
                await _run_pass(name, passes)
    finally:
        if question in passes.waiting:  # cancelled before a pass took it
            passes.waiting.remove(question)
    if question.error is not None:
        raise question.error
    return question.present


async def _run_pass(name: str, passes: _Passes) -> None:
    """One pass for every question waiting now (the caller's among them)."""
    batch, passes.waiting = passes.waiting, []
    passes.running, ended = True, passes.ended
    try:
        # Shielded: a thread cannot be stopped, and the other askers wait on this pass.
        with anyio.CancelScope(shield=True):
            present = await anyio.to_thread.run_sync(
                functools.partial(markers_present, name, [q.marker for q in batch])
            )
        for question in batch:
            question.present = question.marker in present
    except Exception as exc:  # each asker raises it as its own
        for question in batch:
            question.error = exc
    finally:
        for question in batch:
            question.answered.set()
        passes.running, passes.ended = False, anyio.Event()
        ended.set()
