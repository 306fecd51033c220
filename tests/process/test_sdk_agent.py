"""The bridge against an agent built on the official SDK's agent side."""

from __future__ import annotations

import sys

from acp_bridge.errors import ErrorCode
from tests.conftest import AGENTS, AgentHarness

SDK_AGENT = {
    "command": sys.executable,
    "args": [str(AGENTS / "sdk_agent.py")],
    "timeouts": {"startup": 20, "session": 10, "run": 20},
}


def test_echo_turn(harness: AgentHarness) -> None:
    result = harness.run("sdk", "hello there", harness.config({"sdk": SDK_AGENT}))
    assert result.status == "done" and result.output == "echo: hello there"
    assert result.meta.usage == {"input_tokens": 2, "output_tokens": 2, "total_tokens": 4}
    assert harness.leftovers() == []


RUNS_COMMANDS = {"rules": [{"kind": "execute", "decision": "allow"}]}


def test_files_terminals_and_permissions_end_to_end(harness: AgentHarness) -> None:
    (harness.workspace / "in.txt").write_text("from disk\n")
    task = "read in.txt\nwrite out.txt: from the agent\nrun cat out.txt"
    profile = {**SDK_AGENT, "permissions": RUNS_COMMANDS}
    result = harness.run("sdk", task, harness.config({"sdk": profile}))
    assert result.status == "done", result.error
    assert result.output == "from disk\n | wrote {} | from the agent".format(
        harness.workspace / "out.txt"
    )
    assert (harness.workspace / "out.txt").read_text() == "from the agent"
    decisions = [(p.kind, p.decision, p.option_id) for p in result.meta.permissions or []]
    assert decisions == [("edit", "allowed", "allow-1"), ("execute", "allowed", "allow-1")]
    assert result.meta.permissions[1].reason.startswith("rule 1")  # type: ignore[index]
    [terminal] = result.meta.terminals or []
    assert terminal.command == "cat out.txt" and terminal.exit_code == 0
    assert result.meta.files_changed == [str(harness.workspace / "out.txt")]
    assert harness.leftovers() == []


def test_commands_are_refused_by_default(harness: AgentHarness) -> None:
    result = harness.run("sdk", "run touch made.txt", harness.config({"sdk": SDK_AGENT}))
    assert result.output == "run: not allowed" and not (harness.workspace / "made.txt").exists()
    assert result.summary.endswith("[1 permission request refused]")


def test_read_only_mode_refuses_and_says_so(harness: AgentHarness) -> None:
    profile = {**SDK_AGENT, "permissions": {"mode": "read-only"}}
    result = harness.run(
        "sdk", "write out.txt: nope\nrun touch x", harness.config({"sdk": profile})
    )
    assert result.status == "done"
    assert result.output == "write: not allowed | run: not allowed"
    assert not (harness.workspace / "out.txt").exists()
    assert result.summary.endswith("[2 permission requests refused]")
    assert [p.option_id for p in result.meta.permissions or []] == ["deny-1", "deny-1"]


def test_write_outside_the_roots_is_refused_by_the_service(harness: AgentHarness) -> None:
    outside = harness.root / "outside.txt"
    profile = {**SDK_AGENT, "permissions": {"mode": "approve-all"}}
    result = harness.run("sdk", "write ../outside.txt: escaped", harness.config({"sdk": profile}))
    assert "write error" in result.output and "outside the write roots" in result.output
    assert not outside.exists()


def test_timeout_cancels_the_sdk_agent_cleanly(harness: AgentHarness) -> None:
    # The run timeout bounds the whole run, start-up included: enough to start the SDK
    # agent (it imports acp.schema), not enough for the 30 s turn.
    profile = {**SDK_AGENT, "timeouts": {**SDK_AGENT["timeouts"], "run": 6}}  # type: ignore[dict-item]
    result = harness.run("sdk", "sleep 30", harness.config({"sdk": profile}))
    assert result.meta.error_code == ErrorCode.TIMEOUT
    assert result.meta.stop_reason == "cancelled"  # it answered the cancel in time
    assert harness.leftovers() == []
