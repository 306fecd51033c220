"""Detached runs from Python: real entries, run by real supervisor processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import anyio
import pytest

import acp_bridge
from acp_bridge import EntryRequest, RunHandle, list_runs, open_run, start_run
from acp_bridge.errors import ConfigError, UnknownProfileError
from tests.runs.conftest import RunsEnv


def test_detach_ps_events_wait_on_the_demo_agent(runs: RunsEnv) -> None:
    handle = runs.demo("Reply with exactly OK")
    assert handle.status in ("queued", "running")
    listed = list_runs()
    assert [run.id for run in listed] == [handle.id]
    assert listed[0].entry == "acp_spawn" and listed[0].lane == "agent:demo"

    result = handle.wait_sync(timeout=30)
    assert result is not None and result.status == "done", result
    assert result.task_id == handle.id and result.output == "OK"
    record = handle.record()
    assert record.status == "done" and record.detached
    assert record.session_id and record.session_id == result.meta.session_id
    assert record.transcript and os.path.exists(record.transcript)
    assert record.tokens == 5  # the demo agent's reported total_tokens
    events = list(handle.events_sync())
    assert [item.seq for item in events] == list(range(1, len(events) + 1))
    phases = [item.event.data.get("phase") for item in events if item.event.kind == "status"]
    assert phases[:2] == ["running", "starting"] and "prompting" in phases
    assert {item.event.task_id for item in events} == {handle.id}
    assert list(open_run(handle.id).events_sync(after=len(events))) == []


def test_fan_out_to_two_agents_and_collect_both(runs: RunsEnv) -> None:
    async def fan_out() -> list[str]:
        with anyio.fail_after(30):
            first = await start_run(
                EntryRequest(entry="acp_spawn", agent="demo", task="Reply with exactly ONE")
            )
            second = await start_run(
                EntryRequest(entry="acp_spawn", agent="demo", task="Reply with exactly TWO")
            )
            return [str((await handle.wait()).output) for handle in (first, second)]

    assert anyio.run(fan_out) == ["ONE", "TWO"]


def test_follow_replays_then_streams_until_the_end(runs: RunsEnv) -> None:
    handle = runs.bash("echo one; sleep 0.3; echo two")

    async def follow() -> list[str]:
        with anyio.fail_after(20):
            return [
                str(item.event.data.get("text", ""))
                async for item in handle.events(follow=True)
                if item.event.kind == "terminal_output"
            ]

    assert "".join(anyio.run(follow)) == "one\ntwo\n"
    assert handle.status == "done"


def test_the_run_outlives_its_caller_and_a_hang_up(runs: RunsEnv) -> None:
    caller = subprocess.Popen(
        [
            sys.executable, "-c",
            "import signal, sys, time\n"
            "signal.signal(signal.SIGHUP, signal.SIG_DFL)  # whatever we inherited (nohup)\n"
            "from acp_bridge import EntryRequest, start_run_sync\n"
            "request = EntryRequest(entry='bash', task='sleep 0.5; echo survived')\n"
            "print(start_run_sync(request).id, flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert caller.stdout is not None
        run_id = caller.stdout.readline().strip()
        os.killpg(caller.pid, signal.SIGHUP)  # the caller's terminal goes away
        assert caller.wait(timeout=10) == -signal.SIGHUP
    finally:
        caller.kill()
        caller.wait()
    result = open_run(run_id).wait_sync(timeout=20)
    assert result is not None and result.status == "done", result
    assert result.output["stdout"] == "survived\n"


def test_wait_with_a_timeout_then_stop(runs: RunsEnv) -> None:
    handle = runs.bash(f"sleep {runs.sleeper(5)}")
    assert handle.wait_sync(timeout=0.3) is None
    assert handle.status in ("queued", "running")
    assert handle.stop_sync() in ("running", "cancelled")
    result = handle.wait_sync(timeout=10)
    assert result is not None and result.meta.error_code == "cancelled"
    assert handle.status == "cancelled"


def test_what_cannot_run_is_refused_before_anything_starts(runs: RunsEnv) -> None:
    broken = runs.root / "acp-bridge.yaml"
    broken.write_text("acp: {agents: [{name: x, command: 7, surprise: true}]}\n")
    with pytest.raises(ConfigError, match=r"acp-bridge\.yaml"):
        runs.start("acp_spawn", "hello", "x")
    broken.unlink()
    with pytest.raises(UnknownProfileError):
        runs.start("acp_spawn", "hello", "nobody")
    with pytest.raises(ConfigError, match="group"):
        runs.bash("true", group="no spaces allowed")
    with pytest.raises(ConfigError, match="max_tokens"):
        runs.bash("true", max_tokens=0)
    assert list_runs() == []  # nothing was queued, no supervisor started


def test_a_caller_chosen_task_id_names_the_run(runs: RunsEnv) -> None:
    handle = acp_bridge.start_run_sync(EntryRequest(entry="bash", task="true", task_id="fix-1"))
    assert handle.id == "fix-1"
    result = handle.wait_sync(timeout=20)
    assert result is not None and result.task_id == "fix-1"
    with pytest.raises(ConfigError, match="exists already"):
        acp_bridge.start_run_sync(EntryRequest(entry="bash", task="true", task_id="fix-1"))


def test_reading_runs_stays_light(runs: RunsEnv) -> None:
    # wait, ps and logs must not pay for pydantic and the entry code (over 0.3 s of import).
    handle: RunHandle = runs.bash("true")
    code = (
        "import sys\n"
        "from acp_bridge.cli import main\n"
        f"for argv in (['wait', '{handle.id}'], ['ps', '--all'], ['logs', '{handle.id}']):\n"
        "    assert main(argv) == 0\n"
        "heavy = ('pydantic', 'anyio', 'acp_bridge.envelope', 'acp_bridge.config')\n"
        "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "[]"


def test_detaching_skips_the_acp_layer(runs: RunsEnv) -> None:
    # run --detach validates its request and config (pydantic) but runs nothing itself:
    # the ACP layer's rooms (wire schema, connection, session, turn, services) and the terminal
    # prompts are the supervisor's to import; where a profile's command is (_acp's own) is not.
    code = (
        "import sys, json\n"
        "from acp_bridge.cli import main\n"
        "assert main(['run', '--detach', 'demo', 'hello']) == 0\n"
        "heavy = ('acp_bridge._acp.wire', 'acp_bridge._acp.rpc', 'acp_bridge._acp.session',"
        " 'acp_bridge._acp.turn', 'acp_bridge._acp.services',"
        " 'acp_bridge.cli._run_commands.terminal_prompts', 'acp_bridge._entries.acp_spawn.entry')\n"
        "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "[]"
    started = json.loads(done.stdout)
    result = RunHandle(started["task_id"]).wait_sync(timeout=30)
    assert result is not None and result.status == "done", result
