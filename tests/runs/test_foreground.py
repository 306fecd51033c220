"""Foreground runs are recorded too: every entry, from the API, the CLI and the host loop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

import acp_bridge
from acp_bridge import list_runs, open_run
from acp_bridge._os.process import proc
from acp_bridge.cli import main
from acp_bridge.errors import ConfigError
from tests.runs.conftest import RunsEnv


def test_a_public_entry_call_is_recorded_under_its_task_id(runs: RunsEnv) -> None:
    result = acp_bridge.bash_sync("echo fg", task_id="fg-1")
    assert result.task_id == "fg-1" and result.status == "done"
    record = open_run("fg-1").record()
    assert record.entry == "bash" and record.task == "echo fg" and not record.detached
    assert record.status == "done" and record.envelope == result.to_dict()
    assert record.supervisor == proc.own_identity()  # run by the caller itself
    assert open_run("fg-1").wait_sync(timeout=1) == result

    agent = acp_bridge.acp_spawn_sync("demo", "Reply with exactly OK")
    record = open_run(agent.task_id).record()
    assert (record.agent, record.tokens, record.session_id) == ("demo", 5, agent.meta.session_id)


def test_a_bad_task_id_is_a_config_error_under_a_fresh_one(runs: RunsEnv) -> None:
    result = acp_bridge.bash_sync("true", task_id="../../etc/passwd")
    assert result.meta.error_code == "config_error" and "task_id" in result.error
    assert result.task_id.startswith("sub_")


def test_a_run_that_fails_before_its_config_is_read_is_recorded(runs: RunsEnv) -> None:
    (runs.root / "acp-bridge.yaml").write_text("runs: {surprise: 1}\n")
    result = acp_bridge.bash_sync("true")
    assert result.meta.error_code == "config_error"
    assert open_run(result.task_id).record().status == "failed"


def test_runs_record_false_keeps_foreground_runs_out(runs: RunsEnv) -> None:
    result = acp_bridge.bash_sync("true", config=runs.config(record=False))
    assert result.status == "done"
    assert [run.id for run in list_runs()] == []


def test_a_caller_that_cancels_its_call_leaves_a_cancelled_record(runs: RunsEnv) -> None:
    async def cancelled_call() -> None:
        with anyio.move_on_after(0.5):
            await acp_bridge.bash(f"sleep {runs.sleeper(5)}", task_id="given-up")

    anyio.run(cancelled_call)
    record = open_run("given-up").record()
    assert record.status == "cancelled" and record.error_code == "cancelled"


def test_a_killed_foreground_cli_run_is_lost_and_cannot_be_stopped_from_elsewhere(
    runs: RunsEnv,
) -> None:
    cli = subprocess.Popen(
        [sys.executable, "-m", "acp_bridge", "run", "-q", "demo", "sleep 30"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not (active := list_runs(include_ended=False)):
            assert time.monotonic() < deadline and cli.poll() is None
            time.sleep(0.05)
        run = active[0]
        assert run.entry == "acp_spawn" and not run.detached and run.status == "running"
        assert run.supervisor is not None and run.supervisor.pid == cli.pid
        with pytest.raises(ConfigError, match="foreground run"):
            open_run(run.id).stop_sync()
        os.kill(cli.pid, signal.SIGKILL)
        cli.wait(timeout=5)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    result = open_run(run.id).wait_sync(timeout=5)
    assert result is not None and result.meta.error_code == "lost"
    assert "caller (a foreground run)" in result.error


def sqlite_locks(db: Path) -> set[str]:
    """The files of the store at ``db`` this process holds POSIX locks on."""
    files = {os.stat(p).st_ino: p.name for p in db.parent.glob(db.name + "*")}
    held = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if fields[1] == "POSIX" and int(fields[4]) == os.getpid():
            inode = int(fields[5].rsplit(":", 1)[1])
            if inode in files:
                held.add(files[inode])
    return held


def test_measuring_a_runs_changes_never_reads_the_run_store(runs: RunsEnv) -> None:
    # The store lies inside the run's cwd, a write root whose changes are measured. Reading
    # its files through a new descriptor would drop this process's SQLite locks, and another
    # process could then reset the write-ahead log under it and lose its commits.
    acp_bridge.acp_spawn_sync("demo", "Reply with exactly OK", cwd=runs.root)
    held = sqlite_locks(runs.db)
    assert "runs.db-shm" in held  # the ledger's connection: SQLite's lock while it is open
    result = acp_bridge.acp_spawn_sync("demo", "write out.txt: hi", cwd=runs.root)
    assert result.meta.files_changed == [str(runs.root / "out.txt")], result.meta
    assert sqlite_locks(runs.db) == held


def test_smoke_cases_are_recorded(runs: RunsEnv) -> None:
    suite = runs.root / "suite.yaml"
    suite.write_text(
        "name: recorded\ncases:\n  - name: echo\n    entry: bash\n    command: echo smoke\n"
        "    expect: {status: done}\n"
    )
    assert main(["smoke", str(suite)]) == 0
    [run] = list_runs()
    assert (run.entry, run.task, run.status, run.detached) == ("bash", "echo smoke", "done", False)


def test_rows_begun_at_once_wait_for_one_writer_not_for_each_other(runs: RunsEnv) -> None:
    """A begin that finds another thread writing rows returns at once (its thread is free):
    the writer writes its row too, and its ``ended`` waits for that row before finishing it."""
    from acp_bridge._entries.reporting import RunStart
    from acp_bridge._runs.foreground import StoreReporter
    from acp_bridge.envelope import Meta, SubtaskResult

    reporter = StoreReporter()
    config = runs.config()
    records = [
        reporter.record(RunStart(f"at-once-{i}", "bash", "true", None, str(runs.root)))
        for i in range(3)
    ]
    assert all(record is not None for record in records)
    first, second, third = (record for record in records if record is not None)

    def done(task_id: str) -> SubtaskResult:
        return SubtaskResult(
            status="done", summary="ok", output_kind="text", output="ok", task_id=task_id,
            meta=Meta(entry="bash"),
        )  # fmt: skip

    try:
        with reporter.lock:  # the store is busy: the first begin's writer waits for it
            writer = threading.Thread(target=first.begin, args=(config,))
            writer.start()
            deadline = time.monotonic() + 10
            while not reporter._writing and time.monotonic() < deadline:
                writer.join(0.01)
            assert reporter._writing
            for record in (second, third):  # each returns though its row is not written yet
                begin = threading.Thread(target=record.begin, args=(config,))
                begin.start()
                begin.join(10)
                assert not begin.is_alive(), "a begin waited for the busy store"
            assert not second.begun and not third.begun
            ender = threading.Thread(target=second.ended, args=(done("at-once-1"),))
            ender.start()
        writer.join(10)
        ender.join(10)
        assert not writer.is_alive() and not ender.is_alive()
        assert first.begun and second.begun and third.begun
        statuses = {run.id: run.status for run in list_runs()}
        assert statuses == {"at-once-0": "running", "at-once-1": "done", "at-once-2": "running"}
        first.ended(done("at-once-0"))
        third.ended(done("at-once-2"))
        assert {run.status for run in list_runs()} == {"done"}
    finally:
        reporter.close()
