"""Lanes across processes: never more than the limit at once, FIFO, everyone served."""

from __future__ import annotations

import os
import signal
import time

import pytest

from acp_bridge._runs.caller.handle import RunHandle, wait_all_sync
from acp_bridge._runs.store.run_records import RunRecord
from tests.runs.conftest import RunsEnv


def most_at_once(runs: list[RunRecord]) -> int:
    """The most runs between their claim and their end at any moment (the store's clock)."""
    edges = sorted([(r.started_at or 0, 1) for r in runs] + [(r.ended_at or 0, -1) for r in runs])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


# Four times the lane proves its cap, its order and the warm supervisors; fifty (slow) is
# the same at scale.
@pytest.mark.parametrize("count", [16, pytest.param(50, marks=pytest.mark.slow)])
def test_demo_agent_runs_through_a_profile_lane_of_four(runs: RunsEnv, count: int) -> None:
    # The sandbox is off: this is about lanes, and 50 sandboxes cost seconds of CPU.
    runs.config({"demo": {"max_concurrent": 4, "sandbox": {"mode": "off"}}})
    handles = [runs.demo(f"Reply with exactly R{n}") for n in range(count)]
    ended = wait_all_sync([h.id for h in handles], timeout=90)
    assert [run.status for run in ended] == ["done"] * count, [run.summary for run in ended]
    assert [run.summary for run in ended] == [f"R{n}" for n in range(count)]
    assert most_at_once(ended) <= 4
    # FIFO: runs started in the order they were queued (claim times never go back).
    starts = [run.started_at or 0 for run in ended]
    assert starts == sorted(starts)
    # Warm supervisors adopt the next run of their lane: far fewer interpreters than runs
    # paid for importing the entry code.
    supervisor_pids = {
        item.event.data["supervisor_pid"]
        for handle in handles
        for item in handle.events_sync()
        if item.event.data.get("phase") == "running"
    }
    assert len(supervisor_pids) < count // 2, len(supervisor_pids)


def supervisor_pid(handle: RunHandle) -> int:
    who = handle.record().supervisor
    assert who is not None
    return who.pid


def test_a_lost_run_frees_its_slot_and_a_lost_queued_run_frees_the_queue(
    runs: RunsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs.config(max_concurrent=1)  # the global limit, over every lane
    # Each started from an environment of its own, so each has a supervisor of its own that
    # can die alone (runs of one environment share one).
    monkeypatch.setenv("RUNS_TEST_CALLER", "first")
    first = runs.bash(f"sleep {runs.sleeper()}")
    monkeypatch.setenv("RUNS_TEST_CALLER", "second")
    second = runs.demo(f"sleep {runs.sleeper()}")
    monkeypatch.setenv("RUNS_TEST_CALLER", "third")
    third = runs.bash("echo third")
    assert len({supervisor_pid(run) for run in (first, second, third)}) == 3
    deadline = time.monotonic() + 15
    store = runs.store()
    while first.status != "running" or not store.groups(first.id):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert (second.status, third.status) == ("queued", "queued")
    # The head of the queue dies while waiting: it is lost, and does not block the one behind.
    os.kill(supervisor_pid(second), signal.SIGKILL)
    assert second.wait_sync(timeout=5) is not None and second.status == "lost"
    # The running run's supervisor dies and nobody looks at that run: the queued supervisor's
    # own fallback look (at most 2 s apart) finds it lost, and the queue moves on by itself.
    os.kill(supervisor_pid(first), signal.SIGKILL)
    result = third.wait_sync(timeout=10)
    assert result is not None and result.output["stdout"] == "third\n", result
    assert store.get(first.id).status == "lost"  # type: ignore[union-attr]
    store.close()
