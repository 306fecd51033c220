"""Blocking work of one kind asked at once, done by one worker-thread pass for everyone
asking: the marker sweeps of process groups that end together, their private ``/tmp``
removals.

Why: runs that end together (a fan-out of 64 agents) each made the same kind of
blocking call in a thread hop of its own. Each hop takes one of anyio's worker threads (a
new one when none is idle: 40 were made in one batch), and 40 threads doing a few syscalls
each, every one releasing and taking back the GIL the event loop needs, cost far more in
futex traffic and context switches than the calls themselves; 64 marker sweeps each read
every process of the machine where one pass would do. Here a question asked while a pass
runs waits for that pass to end and is answered by the next one, with every question
asked meanwhile: one hop a pass, and a pass always begins after the question (a sweep sees
every process alive when it was asked).

Per event loop (an ``anyio`` ``RunVar``): the bridge may run several loops in threads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar, cast

import anyio
from anyio.lowlevel import RunVar

Q = TypeVar("Q")
A = TypeVar("A")
T = TypeVar("T")

Answer = Callable[[Sequence[Q]], Sequence[A | BaseException]]
"""Answers every question of a pass, in order, in the worker thread: a value, or the
exception that one asker raises. An exception it raises is every asker's."""


# Plain classes, not dataclasses: those compile their methods as every command starts.
class _Question(Generic[Q, A]):
    __slots__ = ("answer", "done", "question")

    def __init__(self, question: Q) -> None:
        self.question = question
        self.done = False
        self.answer: A | BaseException | None = None


class _Passes(Generic[Q, A]):
    __slots__ = ("ended", "running", "waiting")

    def __init__(self) -> None:
        self.waiting: list[_Question[Q, A]] = []
        self.running = False
        self.ended = anyio.Event()  # set when the running pass ends (a new one each pass)


class SharedPasses(Generic[Q, A]):
    """Questions of one kind, answered by shared passes (make one at module level)."""

    __slots__ = ("_answer", "_passes")

    def __init__(self, name: str, answer: Answer[Q, A]) -> None:
        self._answer = answer
        self._passes: RunVar[_Passes[Q, A]] = RunVar(f"acp_bridge_shared_{name}")

    def _current(self) -> _Passes[Q, A]:
        try:
            return self._passes.get()
        except LookupError:
            passes: _Passes[Q, A] = _Passes()
            self._passes.set(passes)
            return passes

    async def ask(self, question: Q) -> A:
        """The answer to ``question`` from the next pass (which this call starts if none
        runs); its exception is raised. Cancelled while queued: never asked; once its pass
        began, the caller waits for the pass (a thread cannot be stopped)."""
        passes = self._current()
        asked: _Question[Q, A] = _Question(question)
        passes.waiting.append(asked)
        try:
            while not asked.done:
                if passes.running:
                    await passes.ended.wait()
                else:
                    await self._run_pass(passes)
        finally:
            if not asked.done and asked in passes.waiting:  # cancelled before a pass took it
                passes.waiting.remove(asked)
        answer, asked.answer = asked.answer, None  # no cycle through a traceback's frames
        if isinstance(answer, BaseException):
            raise answer
        return cast(A, answer)

    async def _run_pass(self, passes: _Passes[Q, A]) -> None:
        """One pass for every question waiting now (the caller's among them)."""
        batch, passes.waiting = passes.waiting, []
        passes.running, ended = True, passes.ended
        try:
            # Shielded: a thread cannot be stopped, and the other askers wait on this pass.
            with anyio.CancelScope(shield=True):
                answers = await anyio.to_thread.run_sync(
                    self._answer, [asked.question for asked in batch]
                )
            for asked, answer in zip(batch, answers, strict=True):
                asked.answer = answer
        except Exception as exc:  # the pass's own failure: each asker raises it
            for asked in batch:
                asked.answer = exc
        finally:
            for asked in batch:
                asked.done = True
            passes.running, passes.ended = False, anyio.Event()
            ended.set()


def _call_each(calls: Sequence[Callable[[], object]]) -> list[object]:
    answers: list[object] = []
    for call in calls:
        try:
            answers.append(call())
        except Exception as exc:  # the caller's own, raised in its task
            answers.append(exc)
    return answers


class SharedThread:
    """Blocking calls of one kind, run one after another by shared passes, each caller
    getting its own value or its own exception (make one at module level, by name)."""

    __slots__ = ("_passes",)

    def __init__(self, name: str) -> None:
        self._passes: SharedPasses[Callable[[], object], object] = SharedPasses(name, _call_each)

    async def run(self, func: Callable[[], T]) -> T:
        """``func()`` in a worker thread, in the next pass."""
        return cast(T, await self._passes.ask(func))
