"""fast-agent (PyPI fast-agent-mcp) with its offline models, through acp_spawn.

``--model passthrough`` echoes the prompt; ``***CALL_TOOL <tool> <json>`` makes it call one
of its tools: ``execute`` (with ``--shell``) runs through our ``terminal/*`` methods,
``read_text_file`` / ``write_text_file`` through our ``fs/*`` methods, each after a
``session/request_permission``. ``--model slow`` waits 3 s before answering (for cancel).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._entries.acp_spawn.live_turns import FollowUp, Held
from acp_bridge.envelope import SubtaskResult
from tests.interop.harness import Run, installed, run

pytestmark = pytest.mark.interop

AGENT = "fast-agent"
ALLOW_COMMANDS = {"rules": [{"kind": "execute", "decision": "allow"}]}


def profile(home: Path, *, model: str = "passthrough", **extra: Any) -> dict[str, Any]:
    folder = installed(AGENT)
    return {
        "command": str(folder / "bin" / "fast-agent"),
        # --home: its session files go to a scratch dir, not into the session cwd.
        "args": ["--no-update-check", "acp", "--model", model, "--shell", "--home", str(home)],
        "timeouts": {"startup": 60, "session": 30, "run": 60, "cancel_grace": 5},
        # The OS sandbox keeps what is not a write root read-only: --home is its state.
        "sandbox": {"state": [str(home)]},
        **extra,
    }


class Once:
    """A follow-ups hook: hands over one more turn after the first, then none."""

    def __init__(self, turn: FollowUp) -> None:
        self.turns = [turn]

    async def __call__(self, result: SubtaskResult, held: Held) -> FollowUp | None:
        assert result.status == "done", result.error
        return self.turns.pop() if self.turns else None


def call_tool(tool: str, **args: Any) -> str:
    return f"***CALL_TOOL {tool} {json.dumps(args)}"


def test_echo_turn(tmp_path: Path, workdir: Path) -> None:
    done = run(AGENT, profile(tmp_path / "home"), "hello from acp-bridge", workdir)
    result = done.result
    assert result.status == "done", result.error
    assert result.output == "hello from acp-bridge"
    assert result.summary == "hello from acp-bridge"
    meta = result.meta
    assert meta.entry == "acp_spawn"
    assert meta.agent == AGENT
    assert meta.stop_reason == "end_turn"
    assert meta.session_id
    assert meta.error_code is None
    assert meta.transcript and Path(meta.transcript).is_file()
    assert not meta.warnings, meta.warnings
    # Its extra update kinds are understood, not reported as unknown.
    assert {"available_commands_update", "session_info_update"} <= done.update_kinds()
    init_reply = next(m for m in done.incoming() if m.get("id") == 1)
    assert init_reply["result"]["agentInfo"]["name"] == "fast-agent-acp"


def test_execute_runs_in_a_client_terminal_after_a_permission(
    tmp_path: Path, workdir: Path
) -> None:
    task = call_tool("execute", command="echo hi-from-terminal")
    done = run(AGENT, profile(tmp_path / "home", permissions=ALLOW_COMMANDS), task, workdir)
    result = done.result
    assert result.status == "done", result.error
    assert "hi-from-terminal" in result.output
    # The permission arrives before its tool_call, with toolCallId "pending".
    (permission,) = result.meta.permissions or []
    assert permission.kind == "execute"
    assert permission.decision == "allowed"
    assert permission.option_id == "allow_once"
    (terminal,) = result.meta.terminals or []
    assert "hi-from-terminal" in terminal.command
    assert terminal.exit_code == 0
    methods = [m["method"] for m in done.incoming() if "method" in m and "id" in m]
    assert methods[:1] == ["session/request_permission"]
    assert {"terminal/create", "terminal/wait_for_exit", "terminal/output"} <= set(methods)
    assert any(call.kind == "execute" for call in result.meta.tool_calls or [])


def test_a_refused_permission_is_said_in_the_summary(tmp_path: Path, workdir: Path) -> None:
    rules = {
        "permissions": {
            "mode": "workspace-write",
            "rules": [{"kind": "execute", "decision": "reject"}],
        }
    }
    task = call_tool("execute", command="echo should-not-run")
    done = run(AGENT, profile(tmp_path / "home", **rules), task, workdir)
    result = done.result
    (permission,) = result.meta.permissions or []
    assert permission.decision == "rejected"
    assert permission.option_id == "reject_once"
    assert "1 permission request refused" in result.summary
    assert not result.meta.terminals
    assert not done.requests("terminal/create")
    assert "should-not-run" not in json.dumps(result.output).replace("echo should-not-run", "")


def test_reads_a_file_through_the_client(tmp_path: Path, workdir: Path) -> None:
    sample = workdir / "sample.txt"
    sample.write_text("first line of the sample\nsecond line\n")
    done = run(
        AGENT, profile(tmp_path / "home"), call_tool("read_text_file", path=str(sample)), workdir
    )
    result = done.result
    assert result.status == "done", result.error
    assert result.output == sample.read_text()
    (read,) = done.requests("fs/read_text_file")
    assert read["params"]["path"] == str(sample)
    assert [p.decision for p in result.meta.permissions or []] == ["allowed"]


def test_writes_a_file_through_the_client(tmp_path: Path, workdir: Path) -> None:
    target = workdir / "out.txt"
    task = call_tool("write_text_file", path=str(target), content="written by fast-agent\n")
    done = run(AGENT, profile(tmp_path / "home"), task, workdir)
    result = done.result
    assert result.status == "done", result.error
    assert target.read_text() == "written by fast-agent\n"
    assert result.meta.files_changed == [str(target)]
    # It reads the target first to build a diff; the missing file is an error it handles.
    assert done.requests("fs/read_text_file")
    assert len(done.requests("fs/write_text_file")) == 1
    (permission,) = result.meta.permissions or []
    assert (permission.kind, permission.decision) == ("edit", "allowed")


def write_outside(tmp_path: Path, workdir: Path, **extra: Any) -> tuple[Run, Path]:
    """fast-agent asked to write a file outside the session cwd (the write root)."""
    outside = tmp_path / "outside.txt"
    task = call_tool("write_text_file", path=str(outside), content="nope\n")
    return run(AGENT, profile(tmp_path / "home", **extra), task, workdir), outside


def test_a_write_outside_the_workspace_is_refused_by_the_sandbox(
    tmp_path: Path, workdir: Path
) -> None:
    # approve-all lets the permission through, so the file service's own check is what
    # refuses: the two layers hold independently.
    done, outside = write_outside(tmp_path, workdir, permissions={"mode": "approve-all"})
    assert not outside.exists()
    (write,) = done.requests("fs/write_text_file")
    (reply,) = [m for m in done.outgoing() if m.get("id") == write["id"] and "method" not in m]
    assert reply["error"]["data"] == {"reason": "sandbox_violation"}
    assert "outside the write roots" in done.result.output
    assert not done.result.meta.files_changed


def test_the_permission_for_a_write_outside_the_workspace_is_refused(
    tmp_path: Path, workdir: Path
) -> None:
    # fast-agent names the path only in rawInput; the policy reads it from there.
    done, outside = write_outside(tmp_path, workdir)
    (permission,) = done.result.meta.permissions or []
    assert permission.decision == "rejected" and "outside the write roots" in permission.reason
    assert not done.requests("fs/write_text_file") and not outside.exists()


def test_an_unknown_tool_ends_the_turn_with_refusal(tmp_path: Path, workdir: Path) -> None:
    done = run(AGENT, profile(tmp_path / "home"), call_tool("no_such_tool"), workdir)
    result = done.result
    assert result.status == "failed"
    assert result.meta.error_code == "refusal"
    assert result.meta.stop_reason == "refusal"


def test_timeout_cancels_the_turn_and_ends_the_agent(tmp_path: Path, workdir: Path) -> None:
    # The slow model waits 3 s a turn; fast-agent itself takes seconds to start, and a run's
    # timeout counts from its start. So the first turn runs untimed while the profile keeps
    # the agent, and the follow-up turn, timed at 1 s, is cancelled mid-turn.
    follow_up = FollowUp("take your time", task_id="sub_timed_turn", timeout=1)
    home = tmp_path / "home"
    slow = profile(home, model="slow", timeouts={**profile(home)["timeouts"], "idle": 30})
    done = run(AGENT, slow, "warm up", workdir, follow_ups=Once(follow_up))
    result = done.result
    assert result.task_id == "sub_timed_turn"
    assert result.status == "failed"
    assert result.meta.error_code == "timeout"
    assert "did not finish within 1s" in result.error
    assert any(m.get("method") == "session/cancel" for m in done.outgoing())
    # fast-agent answers the cancelled prompt with stopReason cancelled.
    assert result.meta.stop_reason == "cancelled"
