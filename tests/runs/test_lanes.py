"""Lanes across processes: never more than the limit at once, FIFO, everyone served."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from acp_bridge._runs.handle import RunHandle, RunOptions, start_sync, wait_all_sync
from acp_bridge._runs.store import Store
from tests.runs.conftest import RunsEnv


def most_at_once(log: Path) -> int:
    """The most runs between their ``start`` and ``end`` lines at any moment (appends to one
    file are ordered, so this is what the commands themselves saw)."""
    now = peak = 0
    for line in log.read_text().splitlines():
        now += 1 if line.startswith("start") else -1
        peak = max(peak, now)
    return peak


def command(log: Path, n: int, pause: float) -> str:
    return f'echo "start {n}" >> {log}; sleep {pause}; echo "end {n}" >> {log}'


def test_fifty_runs_through_a_lane_of_four(runs: RunsEnv) -> None:
    log = runs.root / "lane.log"
    lane = RunOptions(max_concurrent=4)
    began = time.monotonic()
    handles = [start_sync("bash", command(log, n, 0.1), options=lane) for n in range(50)]
    ended = wait_all_sync([h.id for h in handles], timeout=60)
    took = time.monotonic() - began
    assert [run.status for run in ended] == ["done"] * 50, [run.summary for run in ended]
    assert most_at_once(log) <= 4
    assert len(log.read_text().splitlines()) == 100

    # FIFO: runs were started in the order they were queued (claim times never go back).
    store = Store(runs.db)
    rows = store.db.execute("SELECT id, started_at FROM runs ORDER BY seq").fetchall()
    assert [row[0] for row in rows] == [h.id for h in handles]
    starts = [row[1] for row in rows]
    assert starts == sorted(starts)
    # Never more than four between claim and end, by the store's own clock either.
    edges = sorted([(r.started_at, 1) for r in ended] + [(r.ended_at, -1) for r in ended])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    assert peak <= 4
    store.close()
    assert took < 30, took  # ~5 s here: warm supervisors adopt the next run of their lane


def test_the_global_limit_spans_lanes(runs: RunsEnv) -> None:
    log = runs.root / "global.log"
    handles = [
        start_sync(
            "bash",
            command(log, n, 0.3),
            options=RunOptions(lane=f"lane-{n % 3}", global_max_concurrent=2),
        )
        for n in range(6)
    ]
    ended = wait_all_sync([h.id for h in handles], timeout=30)
    assert [run.status for run in ended] == ["done"] * 6
    assert most_at_once(log) <= 2


def supervisor_pid(handle: RunHandle) -> int:
    who = handle.run().supervisor
    assert who is not None
    return who.pid


def test_a_lost_run_frees_its_slot_and_a_lost_queued_run_frees_the_queue(runs: RunsEnv) -> None:
    lane = RunOptions(lane="single", max_concurrent=1)
    first = start_sync("bash", f"sleep {runs.sleeper()}", options=lane)
    second = start_sync("bash", f"sleep {runs.sleeper()}", options=lane)
    third = start_sync("bash", "echo third", options=lane)
    deadline = time.monotonic() + 15
    while first.status != "running" or not Store(runs.db).groups(first.id):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # The head of the queue dies while waiting: it is lost, and does not block the one behind.
    os.kill(supervisor_pid(second), signal.SIGKILL)
    assert second.wait_sync(timeout=5).status == "lost"
    # The running run's supervisor dies and nobody looks at that run: the queued supervisor's
    # own fallback look (at most 2 s apart) finds it lost, and the queue moves on by itself.
    os.kill(supervisor_pid(first), signal.SIGKILL)
    run = third.wait_sync(timeout=10)
    assert run.status == "done", run.envelope
    assert run.envelope is not None and run.envelope["output"]["stdout"] == "third\n"
    assert Store(runs.db).get(first.id).status == "lost"  # type: ignore[union-attr]


def test_warm_supervisors_carry_the_queue(runs: RunsEnv) -> None:
    lane = RunOptions(max_concurrent=2)
    handles = [start_sync("bash", "sleep 0.2", options=lane) for _ in range(8)]
    assert [r.status for r in wait_all_sync([h.id for h in handles], timeout=30)] == ["done"] * 8
    carriers = {
        event["supervisor_pid"]
        for handle in handles
        for event in handle.events_sync()
        if event.get("phase") == "running"
    }
    assert len(carriers) < 8, "no run was adopted by a warm supervisor"
