"""bash-direct as real processes: exit codes, timeouts, process groups, output bounds, depth."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_bridge._entries.bash import CommandResult, bash, bash_sync
from acp_bridge._entries.depth import subtask_level
from acp_bridge._os.process.environment import DEPTH_ENV, constructed_env
from acp_bridge.config import Config, LoadedConfig
from acp_bridge.envelope import BASH_RESULT_SCHEMA, SubtaskResult
from acp_bridge.errors import ErrorCode
from acp_bridge.events import Event
from tests.conftest import MARKER_VAR
from tests.helpers import default_config, gone_within, run_bounded, until_processes

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


SANDBOX_OFF = LoadedConfig(
    None, Config.model_validate({"sandbox": {"mode": "off"}}), CONFIG.profiles
)
# Each process test runs in the default sandbox (a PID namespace ends everything) and with
# the sandbox off (the process group and the marker sweep must do it alone).
CONFIGS = pytest.mark.parametrize("config", [CONFIG, SANDBOX_OFF], ids=["sandbox", "no-sandbox"])


async def run_marked(command: str, marker: str, config: LoadedConfig, **kwargs: object) -> Any:
    env = {MARKER_VAR: marker}
    return await bash(command, config=config, env=env, **kwargs)  # type: ignore[arg-type]


@CONFIGS
def test_timeout_kills_the_whole_group_including_grandchildren(
    marker: str, config: LoadedConfig
) -> None:
    command = "(sleep 60 & wait) & sleep 60 & echo started; wait"

    async def scenario() -> SubtaskResult:
        async with anyio.create_task_group() as tg:
            results: list[SubtaskResult] = []
            tg.start_soon(lambda: _append(results, run_marked(command, marker, config, timeout=2)))
            await until_processes(MARKER_VAR, marker, 4)  # bash, the subshell, two sleeps
        return results[0]

    result = run_bounded(scenario, limit=15)  # the sleeps would take 60 s
    assert result.status == "failed" and result.error == "bash timed out after 2s"
    assert result.output["exit_code"] == 124 and result.meta.error_code == ErrorCode.TIMEOUT
    assert result.output["stdout"] == "started\n"
    assert gone_within(MARKER_VAR, marker) == []


async def _append(results: list[SubtaskResult], call: Awaitable[SubtaskResult]) -> None:
    results.append(await call)


@CONFIGS
def test_background_children_die_when_the_command_ends(marker: str, config: LoadedConfig) -> None:
    # The background sleep holds stdout open; the result must not wait for it (run_bounded
    # fails the test long before the 60 s sleep would end).
    command = "sleep 60 & while [ ! -e /proc/$!/cmdline ]; do :; done; echo done"
    result = run_bounded(run_marked, command, marker, config)
    assert result.ok and result.output["stdout"] == "done\n"
    assert gone_within(MARKER_VAR, marker) == []


@CONFIGS
def test_caller_cancellation_kills_the_group(marker: str, config: LoadedConfig) -> None:
    async def cancelled() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_marked, "sleep 60 & wait", marker, config)
            await until_processes(MARKER_VAR, marker, 2)
            tg.cancel_scope.cancel()  # the caller goes away mid-command

    run_bounded(cancelled)
    assert gone_within(MARKER_VAR, marker) == []


@CONFIGS
def test_a_process_that_left_the_group_cannot_hang_the_result(
    marker: str, config: LoadedConfig
) -> None:
    # It keeps the pipes open for 30 s; run_bounded (15 s) fails the test if we wait for it.
    result = run_bounded(run_marked, "setsid sleep 30 & echo ok", marker, config)
    assert result.ok and result.output["stdout"] == "ok\n"
    # Inside the sandbox its namespace ends it; without, the marker sweep does.
    assert gone_within(MARKER_VAR, marker) == []


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
