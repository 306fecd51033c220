"""Stopping runs, and runs whose supervisor dies: never ``running`` forever, nothing left."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from acp_bridge._runs import procs
from acp_bridge._runs.handle import RunHandle, RunOptions, list_runs, start_sync
from acp_bridge._runs.records import Run
from acp_bridge._runs.store import Store
from tests.runs.conftest import RunsEnv, processes_running, wait_until_gone


def wait_for(what: Callable[[], bool], limit: float = 15.0) -> None:
    deadline = time.monotonic() + limit
    while not what():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def started_processes(store: Store, handle: RunHandle) -> None:
    """Until the run runs and its supervisor has recorded the process group it started."""
    wait_for(lambda: handle.status == "running" and bool(store.groups(handle.id)))


def supervisor_of(handle: RunHandle) -> procs.Identity:
    who = handle.run().supervisor
    assert who is not None
    return who


def test_stop_a_running_demo_agent_turn(runs: RunsEnv) -> None:
    handle = start_sync("acp_spawn", "demo", "sleep 30")
    wait_for(lambda: any(e["kind"] == "tool_call" for e in handle.events_sync()))
    began = time.monotonic()
    handle.stop_sync()
    run = handle.wait_sync(timeout=15)
    assert run.status == "cancelled", run.envelope
    assert time.monotonic() - began < 10
    assert run.envelope is not None and run.envelope["meta"]["error_code"] == "cancelled"
    assert run.envelope["status"] == "failed"


def test_stop_a_running_command_ends_its_processes(runs: RunsEnv) -> None:
    sleeper = runs.sleeper()
    handle = start_sync("bash", f"sleep {sleeper}")
    started_processes(runs.store(), handle)
    assert processes_running(sleeper)
    handle.stop_sync()
    run = handle.wait_sync(timeout=15)
    assert run.status == "cancelled", run.envelope
    assert run.envelope is not None and run.envelope["output"]["exit_code"] == -1
    assert wait_until_gone(sleeper) == []


def test_stop_a_queued_run_at_once(runs: RunsEnv) -> None:
    lane = RunOptions(lane="one-at-a-time", max_concurrent=1)
    first = start_sync("bash", f"sleep {runs.sleeper()}", options=lane)
    second = start_sync("bash", "echo never", options=lane)
    wait_for(lambda: first.status == "running")
    assert second.status == "queued"
    assert second.stop_sync().status == "cancelled"  # no supervisor round trip needed
    ended = second.run()
    assert ended.envelope is not None and ended.envelope["error"] == "stopped before it started"
    first.stop_sync()
    assert first.wait_sync(timeout=15).status == "cancelled"


def test_sigterm_to_a_supervisor_is_a_graceful_stop(runs: RunsEnv) -> None:
    sleeper = runs.sleeper()
    handle = start_sync("bash", f"sleep {sleeper}")
    started_processes(runs.store(), handle)
    os.kill(supervisor_of(handle).pid, signal.SIGTERM)
    run = handle.wait_sync(timeout=15)
    assert run.status == "cancelled", run.envelope
    assert wait_until_gone(sleeper) == []


def lost_within(handle: RunHandle, seconds: float) -> Run:
    began = time.monotonic()
    run = handle.wait_sync(timeout=seconds)
    assert run.status == "lost", (run.status, time.monotonic() - began)
    return run


def test_sigkill_of_the_supervisor_is_lost_within_5_s_and_leaves_nothing(runs: RunsEnv) -> None:
    sleeper = runs.sleeper()
    handle = start_sync("bash", f"sleep {sleeper}")
    started_processes(runs.store(), handle)
    os.kill(supervisor_of(handle).pid, signal.SIGKILL)
    run = lost_within(handle, 5)
    assert run.envelope is not None
    assert run.envelope["meta"]["error_code"] == "lost" and run.envelope["status"] == "failed"
    assert "supervisor" in run.envelope["error"]
    assert wait_until_gone(sleeper, limit=5) == []


def test_a_lost_agent_run_ends_the_agent(runs: RunsEnv) -> None:
    store = runs.store()
    handle = start_sync("acp_spawn", "demo", "sleep 30")
    started_processes(store, handle)
    agents = store.groups(handle.id)
    os.kill(supervisor_of(handle).pid, signal.SIGKILL)
    lost_within(handle, 5)
    wait_for(lambda: not any(procs.alive(agent) for agent in agents), limit=5)


def test_ps_turns_a_dead_supervisors_run_lost(runs: RunsEnv) -> None:
    sleeper = runs.sleeper()
    handle = start_sync("bash", f"sleep {sleeper}")
    started_processes(runs.store(), handle)
    os.kill(supervisor_of(handle).pid, signal.SIGKILL)
    wait_for(lambda: list_runs()[0].status == "lost", limit=5)
    assert wait_until_gone(sleeper, limit=5) == []
