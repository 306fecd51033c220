"""A child's exit reaches the event loop through its pidfd, not a thread per child: its exit
code and its death by a signal come back as before, a loop in another thread can start
children too, a watcher the host chose is left alone, and a status taken elsewhere is
reported as asyncio reports it."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import warnings

import anyio
import pytest

from acp_bridge._os.process import child_exits
from acp_bridge._os.process.procgroup import ProcessGroup

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfds: Linux")
OLD_ASYNCIO = sys.version_info < (3, 12)


def _waitpid_threads() -> list[str]:
    # ThreadedChildWatcher names its threads "asyncio-waitpid-N".
    return [t.name for t in threading.enumerate() if "waitpid-" in t.name]


async def _start(*argv: str) -> ProcessGroup:
    return await ProcessGroup.start(
        list(argv), env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def test_exit_codes_and_signals_come_back_without_a_thread_per_child() -> None:
    async def main() -> None:
        sleepers = [await _start("sleep", "30") for _ in range(4)]
        quick = await _start("sh", "-c", "exit 7")
        assert _waitpid_threads() == []  # five children, no thread waiting on any of them
        with anyio.fail_after(10):
            assert await quick.process.wait() == 7
            for group in sleepers:
                group.signal(signal.SIGTERM)
                assert await group.process.wait() == -signal.SIGTERM

    anyio.run(main)
    if OLD_ASYNCIO:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            watcher = asyncio.get_event_loop_policy().get_child_watcher()
        assert type(watcher).__name__ == "LoopPidfdWatcher"


def test_a_loop_in_another_thread_starts_and_waits_for_children() -> None:
    # 3.11's own PidfdChildWatcher serves only the main thread's loop: this failed with it.
    codes: list[int] = []

    def in_thread() -> None:
        async def main() -> None:
            group = await _start("sh", "-c", "exit 3")
            with anyio.fail_after(10):
                codes.append(await group.process.wait())

        anyio.run(main)

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(20)
    assert codes == [3]


@pytest.mark.skipif(not OLD_ASYNCIO, reason="3.12 and later: asyncio's default uses pidfds")
def test_a_watcher_the_host_chose_is_left_alone() -> None:
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        before = policy.get_child_watcher()
        chosen = asyncio.SafeChildWatcher()
        policy.set_child_watcher(chosen)
        try:
            assert child_exits.use_pidfds.__wrapped__() is False  # type: ignore[attr-defined]
            assert policy.get_child_watcher() is chosen
        finally:
            policy.set_child_watcher(before)


@pytest.mark.skipif(not OLD_ASYNCIO, reason="the backported watcher is 3.11's")
def test_a_status_taken_elsewhere_is_reported_as_asyncio_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> int | None:
        group = await _start("sleep", "30")  # still running: nobody reaped it yet
        os.kill(group.pid, signal.SIGKILL)
        # Blocking on purpose: the loop must not get its turn before the status is taken.
        os.waitpid(group.pid, 0)  # noqa: ASYNC222
        with anyio.fail_after(10):
            return await group.process.wait()

    with caplog.at_level(logging.WARNING, logger="acp_bridge.processes"):
        assert anyio.run(main) == child_exits.EXIT_STATUS_LOST
    assert "taken elsewhere" in caplog.text
