"""bash-direct as real processes: exit codes, timeouts, process groups, output bounds, depth."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_bridge._entries.depth import subtask_level
from acp_bridge._entries.shell import CommandResult, bash, bash_sync
from acp_bridge._os.environment import DEPTH_ENV, constructed_env
from acp_bridge.envelope import BASH_RESULT_SCHEMA, SubtaskResult
from acp_bridge.errors import ErrorCode
from acp_bridge.events import Event
from tests.helpers import (
    default_config,
    read_pids,
    run_bounded,
    wait_all_dead,
)

CONFIG = default_config()


async def run(command: str, **kwargs: object) -> SubtaskResult:
    return await bash(command, config=CONFIG, **kwargs)  # type: ignore[arg-type]


def test_exit_zero_is_done_with_the_bash_result_shape() -> None:
    result = run_bounded(run, "printf 'one\\ntwo\\nthree\\n' | tail -n 1")
    assert result.ok and result.summary == "three"
    assert result.output_kind == "json" and result.output_schema == BASH_RESULT_SCHEMA
    assert result.output == {
        "exit_code": 0,
        "stdout_truncated": False,
        "stderr_truncated": False,
        "stdout": "three\n",
        "stderr": "",
    }
    assert result.meta.entry == "bash" and result.meta.depth == 1


def test_nonzero_exit_fails_and_keeps_the_output() -> None:
    result = run_bounded(run, "echo out; echo err >&2; exit 3")
    assert result.status == "failed" and result.error == "bash exited with code 3"
    assert result.meta.error_code == ErrorCode.NONZERO_EXIT
    assert result.output["stdout"] == "out\n" and result.output["stderr"] == "err\n"


def test_killed_by_a_signal_reports_128_plus_n() -> None:
    result = run_bounded(run, "kill -TERM $$")
    assert result.output["exit_code"] == 143


def test_timeout_kills_the_whole_group_including_grandchildren(pidfile: Path) -> None:
    command = (
        f"(sleep 60 & echo $! >> {pidfile}; wait) & "
        f"sleep 60 & echo $! >> {pidfile}; echo started; wait"
    )
    result = run_bounded(run, command, timeout=0.5, limit=10)  # the sleeps would take 60 s
    assert result.status == "failed" and result.error == "bash timed out after 0.5s"
    assert result.output["exit_code"] == 124 and result.meta.error_code == ErrorCode.TIMEOUT
    assert result.output["stdout"] == "started\n"
    assert len(read_pids(pidfile)) == 2
    assert wait_all_dead(read_pids(pidfile)) == []


def test_background_children_die_when_the_command_ends(pidfile: Path) -> None:
    # The background sleep holds stdout open; the result must not wait for it (run_bounded
    # fails the test long before the 60 s sleep would end).
    result = run_bounded(run, f"sleep 60 & echo $! > {pidfile}; echo done")
    assert result.ok and result.output["stdout"] == "done\n"
    assert wait_all_dead(read_pids(pidfile)) == []


def test_caller_cancellation_kills_the_group(pidfile: Path) -> None:
    async def cancelled() -> None:
        with anyio.move_on_after(0.5):
            await run(f"sleep 60 & echo $! > {pidfile}; wait")
        raise AssertionError("the command should still have been running")

    with pytest.raises(AssertionError, match="still have been running"):
        run_bounded(cancelled)
    assert len(read_pids(pidfile)) == 1
    assert wait_all_dead(read_pids(pidfile)) == []


def test_a_process_that_left_the_group_cannot_hang_the_result(pidfile: Path) -> None:
    # It keeps the pipes open for 30 s; run_bounded (15 s) fails the test if we wait for it.
    result = run_bounded(run, f"setsid sleep 30 & echo $! > {pidfile}; echo ok")
    assert result.ok and result.output["stdout"] == "ok\n"  # the escapee: killed by the fixture


def test_each_stream_keeps_head_and_tail() -> None:
    command = "head -c 100000 /dev/zero | tr '\\0' a; echo; echo END; echo small >&2"
    result = run_bounded(run, command, max_output_bytes=1000)
    out = result.output
    assert out["stdout_truncated"] and not out["stderr_truncated"]
    assert out["stdout"].startswith("a" * 100) and out["stdout"].endswith("END\n")
    assert "bytes omitted ...]" in out["stdout"] and len(out["stdout"]) < 1100
    assert out["stderr"] == "small\n"


def test_cannot_start_is_exit_code_minus_one(tmp_path: Path) -> None:
    missing_dir = run_bounded(run, "true", cwd=tmp_path / "nope")
    assert missing_dir.output["exit_code"] == -1
    assert missing_dir.meta.error_code == ErrorCode.SPAWN_FAILED
    assert "working directory does not exist" in missing_dir.error
    no_bash = run_bounded(run, "true", env={"PATH": str(tmp_path)})
    assert no_bash.output["exit_code"] == -1 and "bash not found" in no_bash.error


def test_environment_is_constructed_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    env = constructed_env(depth=1, extra={"EXTRA": "1"})
    assert "SECRET_TOKEN" not in env and env["LC_ALL"] == "C.UTF-8"
    assert env["EXTRA"] == "1" and env[DEPTH_ENV] == "1" and "PATH" in env
    result = run_bounded(
        run, "echo ${SECRET_TOKEN:-unset} $EXTRA $ACP_BRIDGE_DEPTH", env={"EXTRA": "x"}
    )
    assert result.output["stdout"] == "unset x 1\n"


def test_events_stream_terminal_output_under_long_shell() -> None:
    events: list[Event] = []
    run_bounded(run, "echo one; echo two >&2", on_event=events.append)
    kinds = [e.kind for e in events]
    assert kinds[0] == "terminal" and kinds[-1] == "terminal"
    streams = {e.data["stream"]: e.data["text"] for e in events if e.kind == "terminal_output"}
    assert streams == {"stdout": "one\n", "stderr": "two\n"}
    quiet: list[Event] = []
    run_bounded(run, "echo one", on_event=quiet.append, observe_profile="default")
    assert "terminal_output" not in {e.kind for e in quiet}


def test_bad_observe_profile_is_a_config_error_envelope() -> None:
    result = run_bounded(run, "true", observe_profile="nope")
    assert result.meta.error_code == ErrorCode.CONFIG_ERROR


def test_plain_call_returns_the_bare_result_at_the_callers_level() -> None:
    async def plain() -> CommandResult:
        return await bash("echo $ACP_BRIDGE_DEPTH", run_in_subtask=False, config=CONFIG)

    result = run_bounded(plain)
    assert isinstance(result, CommandResult)
    assert result.exit_code == 0 and result.stdout == "0\n"


def test_inside_a_subtask_run_in_subtask_hits_the_depth_limit_explicitly() -> None:
    async def inside() -> tuple[SubtaskResult, CommandResult]:
        with subtask_level(1):
            nested = await bash("echo never", config=CONFIG)
            plain = await bash("echo $ACP_BRIDGE_DEPTH", run_in_subtask=False, config=CONFIG)
        return nested, plain

    nested, plain = run_bounded(inside)
    assert nested.status == "failed" and nested.meta.error_code == ErrorCode.DEPTH_LIMIT
    assert nested.output_schema == "" and nested.meta.depth == 2
    assert plain.stdout == "1\n"


def test_depth_from_the_environment_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEPTH_ENV, "1")
    result = run_bounded(run, "echo never")
    assert result.meta.error_code == ErrorCode.DEPTH_LIMIT


def test_a_misspelt_option_is_not_ignored() -> None:
    with pytest.raises(TypeError, match="timout"):
        run_bounded(run, "true", timout=5)


def test_sync_wrapper() -> None:
    result = bash_sync("echo hi", config=CONFIG)
    assert isinstance(result, SubtaskResult) and result.output["stdout"] == "hi\n"
