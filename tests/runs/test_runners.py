"""One supervisor running several detached runs at once, and how it fails: killed
mid-run, signalled, one run stopped or over budget among several, callers from different
environments, idle. The last tests are the store side, without supervisor processes."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from acp_bridge._os.process import proc
from acp_bridge._runs import unfinished
from acp_bridge._runs.caller.handle import RunHandle, wait_all_sync
from acp_bridge._runs.store import supervisors
from acp_bridge._runs.store.run_records import NewRun
from acp_bridge._runs.store.run_store import Store
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode
from tests.runs.conftest import RunsEnv, processes_running, wait_until_gone
from tests.runs.test_lanes import most_at_once


def wait_for(what: Callable[[], bool], limit: float = 15.0) -> None:
    deadline = time.monotonic() + limit
    while not what():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def supervisor_of(handle: RunHandle) -> proc.Identity:
    who = handle.record().supervisor
    assert who is not None
    return who


def ended(handle: RunHandle, limit: float = 20.0) -> SubtaskResult:
    result = handle.wait_sync(timeout=limit)
    assert result is not None, f"{handle.id} did not end"
    return result


def running_with_processes(runs: RunsEnv, handles: list[RunHandle]) -> None:
    """Until every run runs and has recorded the process group it started."""
    store = runs.store()
    wait_for(lambda: all(h.status == "running" and store.groups(h.id) for h in handles))
    store.close()


def test_runs_of_one_environment_share_one_supervisor_and_run_at_once(runs: RunsEnv) -> None:
    handles = [runs.bash(f"sleep 0.5; echo {n}") for n in range(3)]
    handles.append(runs.demo("Reply with exactly FOUR"))
    assert len({supervisor_of(h) for h in handles}) == 1  # one process start, one import
    records = wait_all_sync([h.id for h in handles], timeout=30)
    assert [r.status for r in records] == ["done"] * 4, [r.summary for r in records]
    assert [ended(h).output["stdout"] for h in handles[:3]] == ["0\n", "1\n", "2\n"]
    assert ended(handles[3]).output == "FOUR"
    assert most_at_once(records[:3]) == 3  # side by side, not one after the other


def test_callers_from_different_environments_get_supervisors_of_their_own(
    runs: RunsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNS_TEST_CALLER", "a")
    first = runs.bash("sleep 1")
    monkeypatch.setenv("RUNS_TEST_CALLER", "b")
    second = runs.bash("sleep 1")
    other_dir = runs.root / "elsewhere"
    other_dir.mkdir()
    monkeypatch.chdir(other_dir)  # same variables, another working directory
    third = runs.bash("pwd")
    monkeypatch.chdir(runs.root)
    monkeypatch.setenv("RUNS_TEST_CALLER", "a")
    fourth = runs.bash("true")  # the first caller's environment again
    before = os.umask(0o077)  # the same, but files it makes are private
    try:
        fifth = runs.bash("true")
    finally:
        os.umask(before)
    who = [supervisor_of(h) for h in (first, second, third, fourth, fifth)]
    assert len({who[0], who[1], who[2], who[4]}) == 4
    assert who[3] == who[0]
    # What "the same environment" was, as recorded (supervisors are not dumpable: their
    # /proc entries are not ours to read), and the run that came from elsewhere ran there.
    keys = [h.record().env_key for h in (first, second, third, fourth, fifth)]
    assert keys[3] == keys[0] and len({keys[0], keys[1], keys[2], keys[4]}) == 4
    assert ended(third).output["stdout"] == f"{other_dir}\n"
    assert {ended(h).status for h in (first, second, fourth, fifth)} == {"done"}


def test_sigkill_of_a_supervisor_running_several_runs_loses_them_all_and_ends_their_processes(
    runs: RunsEnv,
) -> None:
    sleepers = [runs.sleeper() for _ in range(2)]
    handles = [runs.bash(f"sleep {sleeper}") for sleeper in sleepers]
    handles.append(runs.demo("sleep 30"))  # the agent waits mid-turn
    assert len({supervisor_of(h) for h in handles}) == 1
    running_with_processes(runs, handles)
    store = runs.store()
    groups = {h.id: store.groups(h.id) for h in handles}
    # Each run recorded only the process group it started, not its neighbours'.
    assert [len(found) for found in groups.values()] == [1, 1, 1], groups
    assert len({g for found in groups.values() for g in found}) == 3
    assert all(processes_running(sleeper) for sleeper in sleepers)
    os.kill(supervisor_of(handles[0]).pid, signal.SIGKILL)
    for handle in handles:
        result = ended(handle, limit=5)
        assert result.status == "failed" and result.meta.error_code == "lost", result
        assert handle.status == "lost"
    for sleeper in sleepers:
        assert wait_until_gone(sleeper) == [], sleeper
    wait_for(lambda: not any(proc.alive(g) for found in groups.values() for g in found), 5)
    # The dead supervisor takes no new run: the next one gets a supervisor of its own.
    after = runs.bash("echo after")
    assert supervisor_of(after) != supervisor_of(handles[0])
    assert ended(after).output["stdout"] == "after\n"
    store.close()


def test_stop_one_run_among_several_leaves_the_others_running(runs: RunsEnv) -> None:
    sleepers = [runs.sleeper() for _ in range(3)]
    handles = [runs.bash(f"sleep {sleeper}") for sleeper in sleepers]
    running_with_processes(runs, handles)
    handles[1].stop_sync()
    result = ended(handles[1], limit=15)
    assert result.meta.error_code == "cancelled" and handles[1].status == "cancelled"
    assert wait_until_gone(sleepers[1]) == []
    assert [h.status for h in (handles[0], handles[2])] == ["running", "running"]
    assert processes_running(sleepers[0]) and processes_running(sleepers[2])
    for handle in (handles[0], handles[2]):
        handle.stop_sync()
        assert ended(handle, limit=15).meta.error_code == "cancelled"


def test_a_run_over_its_budget_ends_while_the_others_go_on(runs: RunsEnv) -> None:
    runs.usage_agent_config()
    steady = runs.bash("sleep 2; echo steady")
    over = runs.start("acp_spawn", "anything", "usage", max_cost=0.1)
    assert supervisor_of(steady) == supervisor_of(over)
    result = ended(over)
    assert result.meta.error_code == "budget" and result.output == "partial answer", result
    assert steady.status == "running"  # the budget cut one run, not the process
    assert ended(steady).output["stdout"] == "steady\n"


def test_a_signal_stops_every_run_of_the_supervisor_queued_ones_too(runs: RunsEnv) -> None:
    runs.config(max_concurrent=1)
    sleeper = runs.sleeper()
    first = runs.bash(f"sleep {sleeper}")
    running_with_processes(runs, [first])
    queued = runs.bash("echo never")
    assert queued.status == "queued" and supervisor_of(queued) == supervisor_of(first)
    os.kill(supervisor_of(first).pid, signal.SIGTERM)
    assert ended(first, limit=15).meta.error_code == "cancelled"
    result = ended(queued, limit=15)
    assert result.meta.error_code == "cancelled" and result.error == "stopped before it started"
    assert wait_until_gone(sleeper) == []


def test_an_idle_supervisor_exits_and_the_next_run_starts_another(runs: RunsEnv) -> None:
    runs.config(supervisor_idle=0.2)
    first = runs.bash("true")
    assert ended(first).status == "done"
    gone = supervisor_of(first)
    wait_for(lambda: not proc.alive(gone), limit=10)
    second = runs.bash("echo again")
    assert supervisor_of(second) != gone
    assert ended(second).output["stdout"] == "again\n"


def test_a_supervisor_waiting_for_more_runs_takes_the_next_one(runs: RunsEnv) -> None:
    runs.config(supervisor_idle=30)
    first = runs.bash("true")
    assert ended(first).status == "done"
    second = runs.bash("echo again")  # after the first ended: the same idle supervisor
    assert supervisor_of(second) == supervisor_of(first)
    assert ended(second).output["stdout"] == "again\n"
    os.kill(supervisor_of(first).pid, signal.SIGTERM)  # it would wait 30 s for more
    wait_for(lambda: not proc.alive(supervisor_of(first)), limit=10)


def test_a_supervisor_that_left_as_the_run_was_handed_over_is_replaced(
    runs: RunsEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The starter found a live supervisor, which left the accepting supervisors before the insert:
    the insert hands nothing over, and the run gets a supervisor of its own."""
    monkeypatch.setattr(supervisors, "find", lambda store, env_key: ME)  # alive, never listed
    handle = runs.bash("echo handed over")
    assert supervisor_of(handle) != ME
    assert ended(handle).output["stdout"] == "handed over\n"


# --- the store side: handing over and leaving, no supervisor processes ----------------------

ME = proc.own_identity()
GONE = proc.Identity(ME.pid, ME.start + 1, ME.boot)  # same pid, another start: not alive


def new_run(run_id: str, env_key: str = "k") -> NewRun:
    return NewRun(
        id=run_id, entry="bash", agent=None, task="true", cwd="/", caller_cwd="/",
        request={"entry": "bash", "task": "true"}, config_path=None, lane="entry:bash",
        group=None, env_key=env_key,
    )  # fmt: skip


def test_a_run_is_handed_over_only_while_its_supervisor_accepts_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    assert supervisors.find(store, "k") is None
    assert store.create(new_run("sub_000000000001"), ME, handover="new")
    assert supervisors.find(store, "k") == ME
    assert supervisors.find(store, "other environment") is None
    assert store.create(new_run("sub_000000000002"), ME, handover="accepting")
    assert supervisors.queued_for(store.db, ME) == ["sub_000000000001", "sub_000000000002"]
    assert not supervisors.retire(store, ME)  # it has runs: it stays, and listed
    for run_id in ("sub_000000000001", "sub_000000000002"):
        run = store.get(run_id)
        assert run is not None
        with store.write() as db:
            outcome = unfinished.ended(run, "x", ErrorCode.AGENT_ERROR)
            assert store.finish(db, run_id, outcome, supervisor=ME)
    assert supervisors.retire(store, ME)  # nothing left: off the list, in one transaction
    # A starter that found it just before: nothing is written, it starts another supervisor.
    assert not store.create(new_run("sub_000000000003"), ME, handover="accepting")
    assert store.get("sub_000000000003") is None
    assert supervisors.find(store, "k") is None
    store.close()


def test_a_dead_supervisor_is_never_handed_a_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    assert store.create(new_run("sub_000000000001"), GONE, handover="new")
    assert supervisors.find(store, "k") is None  # its process is gone: its row is removed
    assert not store.create(new_run("sub_000000000002"), GONE, handover="accepting")
    store.close()


def test_a_supervisor_that_stops_accepting_keeps_what_it_has(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.db")
    assert store.create(new_run("sub_000000000001"), ME, handover="new")
    supervisors.stop_accepting(store, ME)
    assert supervisors.find(store, "k") is None
    assert supervisors.active_for(store.db, ME) == ["sub_000000000001"]
    assert not supervisors.retire(store, ME)
    store.close()
