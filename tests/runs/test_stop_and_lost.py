"""Stopping runs, and runs whose supervisor dies: never ``running`` forever, nothing left."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from acp_bridge._os.process import proc
from acp_bridge._runs.caller.handle import RunHandle
from acp_bridge.cli import main
from tests.runs.conftest import RunsEnv, processes_running, wait_until_gone


def wait_for(what: Callable[[], bool], limit: float = 15.0) -> None:
    deadline = time.monotonic() + limit
    while not what():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def started_processes(runs: RunsEnv, handle: RunHandle) -> list[proc.Identity]:
    """Once the run runs and its supervisor recorded the process group it started."""
    store = runs.store()
    wait_for(lambda: handle.status == "running" and bool(store.groups(handle.id)))
    groups = store.groups(handle.id)
    store.close()
    return groups


def supervisor_of(handle: RunHandle) -> proc.Identity:
    who = handle.record().supervisor
    assert who is not None
    return who


def test_stop_a_running_demo_agent_turn(runs: RunsEnv) -> None:
    handle = runs.demo("sleep 30")
    wait_for(lambda: any(item.event.kind == "tool_call" for item in handle.events_sync()))
    handle.stop_sync()
    result = handle.wait_sync(timeout=15)
    assert result is not None and result.status == "failed"
    assert result.meta.error_code == "cancelled" and result.meta.stop_reason == "cancelled"
    assert handle.status == "cancelled"


@pytest.mark.parametrize("how", ["stop", "SIGTERM to the supervisor"])
def test_a_stopped_command_ends_its_processes(runs: RunsEnv, how: str) -> None:
    sleeper = runs.sleeper()
    handle = runs.bash(f"sleep {sleeper}")
    started_processes(runs, handle)
    assert processes_running(sleeper)
    if how == "stop":
        handle.stop_sync()
    else:
        os.kill(supervisor_of(handle).pid, signal.SIGTERM)
    result = handle.wait_sync(timeout=15)
    assert result is not None and result.meta.error_code == "cancelled", result
    assert handle.status == "cancelled"
    assert wait_until_gone(sleeper) == []


def test_stop_a_queued_run_at_once(runs: RunsEnv) -> None:
    runs.config(max_concurrent=1)
    first = runs.bash(f"sleep {runs.sleeper()}")
    second = runs.bash("echo never")
    wait_for(lambda: first.status == "running")
    assert second.status == "queued"
    assert second.stop_sync() == "cancelled"  # no supervisor round trip needed
    result = second.wait_sync(timeout=1)
    assert result is not None and result.error == "stopped before it started"
    first.stop_sync()
    assert first.wait_sync(timeout=15) is not None and first.status == "cancelled"


def printed(argv: list[str]) -> Any:
    """What ``acp-bridge ARGV`` prints (JSON), run in this process."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(argv) == 0
    return json.loads(buffer.getvalue())


def seen_by_wait(handle: RunHandle) -> dict[str, Any]:
    result = handle.wait_sync(timeout=5)
    assert result is not None, "still not ended 5 s after its supervisor was killed"
    return {"status": handle.status, "envelope": result.to_dict()}


def seen_by_ps(handle: RunHandle) -> dict[str, Any]:
    rows = [row for row in printed(["ps", "--all", "--json"]) if row["task_id"] == handle.id]
    return {**rows[0], "envelope": handle.record().envelope}


def seen_by_show(handle: RunHandle) -> dict[str, Any]:
    shown: dict[str, Any] = printed(["show", handle.id])
    return shown


@pytest.mark.parametrize(
    ("entry", "observer"),
    [("acp_spawn", seen_by_wait), ("bash", seen_by_ps), ("bash", seen_by_show)],
    ids=["agent-seen-by-wait", "command-seen-by-ps", "command-seen-by-show"],
)
def test_sigkill_of_the_supervisor_is_lost_within_5_s_and_leaves_nothing(
    runs: RunsEnv, entry: str, observer: Callable[[RunHandle], dict[str, Any]]
) -> None:
    sleeper = runs.sleeper()
    task = f"sleep {sleeper}"
    handle = runs.demo(task) if entry == "acp_spawn" else runs.bash(task)
    groups = started_processes(runs, handle)
    os.kill(supervisor_of(handle).pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while (seen := observer(handle))["status"] != "lost":
        assert time.monotonic() < deadline, seen["status"]
        time.sleep(0.1)
    envelope = seen["envelope"]
    assert envelope["status"] == "failed" and envelope["meta"]["error_code"] == "lost"
    assert "supervisor" in envelope["error"]
    wait_for(lambda: not any(proc.alive(group) for group in groups), limit=5)
    assert wait_until_gone(sleeper, limit=5) == []
