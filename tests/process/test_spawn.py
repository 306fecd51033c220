"""spawn with the offline passthrough model: tool selection, models, output_schema, limits,
and the one depth limit (spawn → spawn, spawn → acp_spawn, across processes)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from acp_bridge._entries.local_loop.builtin_tools import ToolRegistry
from acp_bridge._entries.local_loop.spawn import spawn, spawn_sync
from acp_bridge._loop.passthrough import call_tool_directive as call
from acp_bridge._os.process.environment import DEPTH_ENV
from acp_bridge.config import LoadedConfig, load_config
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode
from acp_bridge.events import Event
from tests.conftest import MARKER_VAR
from tests.helpers import ECHO_SCHEMA, gone_within, run_bounded


def make_config(tmp_path: Path, extra: str = "") -> LoadedConfig:
    (tmp_path / "echo.json").write_text(json.dumps(ECHO_SCHEMA))
    path = tmp_path / "acp-bridge.yaml"
    path.write_text(
        "subtasks: {max_depth: 1}\n"
        "schemas: {subagent.demo.echo.v1: ./echo.json}\n"
        "models: {default: passthrough}\n" + extra
    )
    return load_config(path, environ={})


def run_spawn(tmp_path: Path, task: str, tools: list[str], **kwargs: object) -> SubtaskResult:
    kwargs.setdefault("config", make_config(tmp_path))
    kwargs.setdefault("cwd", tmp_path)
    return run_bounded(spawn, task, tools, **kwargs)


def test_inner_registry_holds_only_known_non_nesting_tools(tmp_path: Path) -> None:
    task = call("bash", {"command": "echo hi"})
    result = run_spawn(tmp_path, task, ["bash", "spawn", "nope", "acp_spawn"])
    assert result.ok and result.output == "hi"
    assert result.meta.tools == ["bash"]
    # Both subtask entries are refused as such, enabled in this config (spawn) or not.
    assert result.meta.tools_ignored == ["nope", "spawn", "acp_spawn"]
    assert result.meta.warnings == [
        "unknown tool 'nope' ignored",
        "tool 'spawn' is never offered inside a subtask",
        "tool 'acp_spawn' is never offered inside a subtask",
    ]
    assert result.meta.entry == "spawn" and result.meta.depth == 1
    assert result.meta.model == "passthrough"


def test_no_tool_left_fails(tmp_path: Path) -> None:
    result = run_spawn(tmp_path, "anything", ["spawn", "nope"])
    assert result.status == "failed" and result.meta.error_code == ErrorCode.CONFIG_ERROR
    assert "at least one usable tool" in result.error


def test_a_tool_the_model_was_not_given_is_not_run(tmp_path: Path) -> None:
    result = run_spawn(tmp_path, call("write_file", {"path": "x", "content": "y"}), ["bash"])
    assert not (tmp_path / "x").exists()
    assert "write_file" in str(result.output)


def test_an_unknown_model_is_a_config_error_not_an_echo(tmp_path: Path) -> None:
    result = run_spawn(tmp_path, "echo me", ["bash"], model="gpt-9")
    assert result.status == "failed" and result.meta.error_code == ErrorCode.CONFIG_ERROR
    assert result.error.startswith("unknown model 'gpt-9'; known models: passthrough. Name it")
    assert result.output == ""  # nothing ran: the echo model did not stand in


def test_output_schema_gives_a_json_envelope(tmp_path: Path) -> None:
    task = call("bash", {"command": 'echo \'```json\n{"ok": true, "value": 42}\n```\''})
    result = run_spawn(tmp_path, task, ["bash"], output_schema="subagent.demo.echo.v1")
    assert result.ok, result.error
    assert result.output_kind == "json" and result.output_schema == "subagent.demo.echo.v1"
    assert result.output == {"ok": True, "value": 42}


def test_output_schema_violation_fails_after_the_repair_turn(tmp_path: Path) -> None:
    task = call("bash", {"command": "echo '{\"ok\": true}'"})
    result = run_spawn(tmp_path, task, ["bash"], output_schema="subagent.demo.echo.v1")
    assert result.status == "failed" and result.meta.error_code == ErrorCode.OUTPUT_SCHEMA
    assert result.output_schema == "subagent.demo.echo.v1" and result.output_kind == "text"
    # First answer, then one repair turn (the passthrough echoes the repair prompt).
    assert result.meta.usage is not None and result.meta.usage["requests"] == 3
    assert "Answer again with the JSON value only" in result.output


def test_timeout_fails_and_leaves_no_process(tmp_path: Path, marker: str) -> None:
    command = f"export {MARKER_VAR}={marker}; sleep 30 & wait"
    task = call("bash", {"command": command})
    result = run_spawn(tmp_path, task, ["bash"], timeout=1)  # bounded: a hang fails it
    assert result.meta.error_code == ErrorCode.TIMEOUT
    # The call never finished: it is recorded as what the loop was doing when time ran out.
    assert [c.status for c in result.meta.tool_calls or []] == ["cancelled"]
    assert gone_within(MARKER_VAR, marker) == []


def test_request_limit_is_max_turn_requests(tmp_path: Path) -> None:
    config = make_config(tmp_path, "tools: {spawn: {max_requests: 1}}\n")
    task = "\n".join([call("bash", {"command": "true"})] * 3)
    result = run_spawn(tmp_path, task, ["bash"], config=config)
    assert result.meta.error_code == ErrorCode.MAX_TURN_REQUESTS


def test_a_bad_directive_is_a_model_error(tmp_path: Path) -> None:
    result = run_spawn(tmp_path, "***CALL_TOOL bash {oops", ["bash"])
    assert result.meta.error_code == ErrorCode.MODEL_ERROR and "not valid JSON" in result.error


def test_events_carry_the_spawn_task_id(tmp_path: Path) -> None:
    events: list[Event] = []
    result = run_spawn(
        tmp_path, call("bash", {"command": "true"}), ["bash"], on_event=events.append
    )
    mine = [e.kind for e in events if e.task_id == result.task_id]
    assert mine == ["status", "tool_call", "tool_update", "message"]


def test_broken_config_is_an_envelope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("subtasks: {max_depth: -1}\n")
    monkeypatch.setenv("ACP_BRIDGE_CONFIG", str(broken))
    result = run_bounded(spawn, "x", ["bash"])
    assert result.meta.error_code == ErrorCode.CONFIG_ERROR and "max_depth" in result.error


# --- the one depth limit ---------------------------------------------------------------------


class Nested(BaseModel):
    task: str


def escalating_registry(tmp_path: Path, config: LoadedConfig) -> ToolRegistry:
    """A parent registry with a host tool that tries to open a subtask from inside one."""
    parent = ToolRegistry(config, cwd=tmp_path)

    async def escalate_spawn(args: Nested) -> str:
        """Try to spawn from inside a spawn."""
        return await parent.call("spawn", {"task": args.task, "tools": ["bash"]})

    async def escalate_acp(args: Nested) -> str:
        """Try acp_spawn from inside a spawn."""
        return await parent.call("acp_spawn", {"agent": "demo", "task": args.task})

    def escalate_sync(args: Nested) -> SubtaskResult:
        """Try spawn_sync from a worker thread inside a spawn."""
        return spawn_sync(args.task, ["bash"], config=config)

    for func in (escalate_spawn, escalate_acp, escalate_sync):
        parent.register(func)
    return parent


@pytest.mark.parametrize(
    ("tool", "entry"),
    [("escalate_spawn", "spawn"), ("escalate_acp", "acp_spawn"), ("escalate_sync", "spawn")],
)
def test_a_spawn_that_tries_to_nest_gets_depth_limit(tmp_path: Path, tool: str, entry: str) -> None:
    config = make_config(tmp_path, "tools: {acp_spawn: {enabled: true}}\n")
    parent = escalating_registry(tmp_path, config)
    result = run_spawn(tmp_path, call(tool, {"task": "echo nested"}), [tool], registry=parent)
    assert result.ok and result.output.startswith("failed: subtask depth limit reached")
    (inner,) = result.meta.subtasks or []
    assert inner["status"] == "failed" and inner["meta"]["error_code"] == "depth_limit"
    assert inner["meta"]["entry"] == entry and inner["meta"]["depth"] == 2


def test_bash_run_in_subtask_inside_spawn_gets_depth_limit(tmp_path: Path) -> None:
    task = call("bash", {"command": "echo never", "run_in_subtask": True})
    result = run_spawn(tmp_path, task, ["bash"])
    (envelope,) = result.meta.subtasks or []
    assert envelope["meta"]["error_code"] == "depth_limit" and envelope["meta"]["entry"] == "bash"


@pytest.mark.parametrize(
    "command", ["spawn 'echo x' --tools bash -q", "bash -q -- echo never"], ids=["spawn", "bash"]
)
def test_a_bridge_started_inside_spawn_refuses_to_go_deeper(tmp_path: Path, command: str) -> None:
    make_config(tmp_path)  # ./acp-bridge.yaml in the inner bridge's cwd: max_depth 1
    bridge = f"{shlex.quote(sys.executable)} -m acp_bridge {command}"
    result = run_spawn(tmp_path, call("bash", {"command": bridge}), ["bash"])
    inner = json.loads(str(result.output))
    assert inner["meta"]["error_code"] == "depth_limit" and inner["meta"]["depth"] == 2


def test_depth_from_the_environment_refuses_spawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEPTH_ENV, "1")
    result = run_spawn(tmp_path, "x", ["bash"])
    assert result.meta.error_code == ErrorCode.DEPTH_LIMIT
