"""Blocking calls asked at once share a worker thread: each caller gets its own value or its
own exception, in the order asked, a caller cancelled while queued is never run, and a
pass that fails as a whole fails each of its askers."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import anyio

from acp_bridge._os.shared_thread import SharedPasses, SharedThread


def test_calls_asked_while_a_pass_runs_share_the_next_one() -> None:
    shared = SharedThread("test_share")
    release = threading.Event()
    ran: list[tuple[int, int]] = []  # (call, thread)
    values: dict[int, int] = {}

    def work(n: int) -> int:
        if n == 0:
            release.wait(10)  # the first pass holds its thread until the others queued
        ran.append((n, threading.get_ident()))
        return n * 10

    async def ask(n: int) -> None:
        values[n] = await shared.run(lambda: work(n))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, 0)
            await anyio.wait_all_tasks_blocked()  # the first pass is running
            for n in range(1, 6):
                tg.start_soon(ask, n)
            await anyio.wait_all_tasks_blocked()
            assert len(shared._passes._current().waiting) == 5  # queued behind it
            release.set()

    anyio.run(main)
    assert values == {n: n * 10 for n in range(6)}
    assert [n for n, _ in ran] == list(range(6))  # in the order asked
    threads_after_first = {thread for n, thread in ran if n > 0}
    assert len(threads_after_first) == 1  # the five queued calls: one hop


def test_an_exception_is_its_own_callers_alone() -> None:
    shared = SharedThread("test_errors")
    outcomes: dict[str, object] = {}

    def fails() -> int:
        raise ValueError("this call's own")

    async def ask(name: str, func: object) -> None:
        try:
            outcomes[name] = await shared.run(func)  # type: ignore[arg-type]
        except ValueError as exc:
            outcomes[name] = exc

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, "before", lambda: 1)
            tg.start_soon(ask, "fails", fails)
            tg.start_soon(ask, "after", lambda: 2)

    anyio.run(main)
    assert outcomes["before"] == 1 and outcomes["after"] == 2
    assert isinstance(outcomes["fails"], ValueError)
    assert str(outcomes["fails"]) == "this call's own"


def test_a_caller_cancelled_while_queued_is_never_run() -> None:
    shared = SharedThread("test_cancel")
    release = threading.Event()
    ran: list[str] = []

    def blocking() -> None:
        release.wait(10)
        ran.append("first")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(shared.run, blocking)
            await anyio.wait_all_tasks_blocked()  # the first pass is running
            with anyio.move_on_after(0.05):  # queued behind it, then cancelled
                await shared.run(lambda: ran.append("cancelled"))
            release.set()
        assert await shared.run(lambda: "later") == "later"  # the queue still works

    anyio.run(main)
    assert ran == ["first"]


def test_a_pass_that_fails_fails_every_asker_of_it() -> None:
    """A batch answer (one /proc sweep for every marker asked, say) that raises: each asker
    of that pass raises it; a later pass answers again."""
    broken = threading.Event()
    broken.set()

    def answer(questions: Sequence[int]) -> list[int]:
        if broken.is_set():
            raise OSError("the pass's own failure")
        return [q + 1 for q in questions]

    passes: SharedPasses[int, int] = SharedPasses("test_pass_failure", answer)
    outcomes: dict[int, object] = {}

    async def ask(n: int) -> None:
        try:
            outcomes[n] = await passes.ask(n)
        except OSError as exc:
            outcomes[n] = exc

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(ask, n)
        broken.clear()
        outcomes[10] = await passes.ask(10)

    anyio.run(main)
    assert all(isinstance(outcomes[n], OSError) for n in range(3))
    assert outcomes[10] == 11
