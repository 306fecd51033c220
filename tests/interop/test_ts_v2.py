"""A v2 agent on the official TypeScript SDK (npm @agentclientprotocol/sdk 2.4.0, pinned;
tests/agents/ts_v2, installed by tests/interop/install.sh ts-v2): ACP v1 and the v2 Preview
behind the SDK's protocol router, one scenario on both. In its turn the agent writes a file
and runs a command through the bridge's MCP tools (the bridge's files and terminals offered
in session/new), inside the default sandbox, each call decided by the policy and listed in
the ledger. The two envelopes differ only in ``meta.protocol_version`` (and what is unique
to a run: task id, session id, times, paths). The agent taking only stdio MCP servers gets
the same tools through the bridge's relay, with the sandbox's network off too; a v2 session
is resumed for a follow-up turn in a new agent process. A config option is read and set as
each version's schema says (v1 ``id``; v2 ``configId`` and a value tagged ``type: "id"``),
the SDK's own validation judging what the bridge sends.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.envelope import SubtaskResult
from tests.interop.harness import installed, run

pytestmark = pytest.mark.interop

AGENT = "ts-v2"
ANSWER = 'wrote=true exit=0 output="written through the bridge\'s MCP tools\\n"'
RUN_RULE = {"kind": "execute", "name": "run_command", "decision": "allow"}


def profile(**extra: Any) -> dict[str, Any]:
    folder = installed(AGENT)
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    return {
        "command": node,
        "args": [str(folder / "agent.mjs")],
        "timeouts": {"startup": 30, "session": 30, "run": 60, "cancel_grace": 5},
        "permissions": {"mode": "workspace-write", "rules": [RUN_RULE]},
        **extra,
    }


def assert_served(result: SubtaskResult, work: Path) -> None:
    """The scenario's turn: a file written and a command run through the tools, decided."""
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert result.output == ANSWER
    assert (work / "from-ts-agent.txt").read_text() == "written through the bridge's MCP tools\n"
    ledger = [(p.name, p.kind, p.decision) for p in result.meta.permissions or []]
    assert ledger == [
        ("write_text_file", "edit", "allowed"),
        ("run_command", "execute", "allowed"),
    ]


def comparable(result: SubtaskResult) -> dict[str, Any]:
    """The envelope without what is unique to a run."""
    data = result.model_dump(mode="json", exclude_none=True)
    data.pop("task_id")
    meta = data["meta"]
    for key in ("session_id", "duration_ms", "transcript", "diff", "protocol_version"):
        meta.pop(key, None)
    return data


def test_v2_agent_writes_and_runs_through_the_bridge_mcp_tools(tmp_path: Path) -> None:
    work = tmp_path / "v2"
    work.mkdir()
    v2 = run(AGENT, profile(protocol="2"), "write and run", work)
    result = v2.result
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    assert result.output == ANSWER
    assert result.meta.protocol_version == 2
    assert (work / "from-ts-agent.txt").read_text() == "written through the bridge's MCP tools\n"
    ledger = [(p.name, p.kind, p.decision) for p in result.meta.permissions or []]
    assert ledger == [
        ("write_text_file", "edit", "allowed"),
        ("run_command", "execute", "allowed"),
    ]
    assert result.meta.files_changed == [str(work / "from-ts-agent.txt")]
    (terminal,) = result.meta.terminals or []
    assert (terminal.command, terminal.exit_code) == ("cat from-ts-agent.txt", 0)
    (new,) = [m for m in v2.outgoing() if m.get("method") == "session/new"]
    (server,) = new["params"]["mcpServers"]
    assert server["type"] == "http" and server["url"].startswith("http://127.0.0.1:")


def test_the_same_scenario_on_v1_gives_the_same_envelope(tmp_path: Path) -> None:
    envelopes = {}
    work = tmp_path / "same"  # one folder: paths in the envelope are the same
    work.mkdir()
    for version in ("1", "2"):
        (work / "from-ts-agent.txt").unlink(missing_ok=True)
        extra = {"services": "mcp"} if version == "1" else {}
        result = run(AGENT, profile(protocol=version, **extra), "write and run", work).result
        assert result.status == "done", (version, result.error, result.meta.stderr_tail)
        assert result.meta.protocol_version == int(version)
        envelopes[version] = comparable(result)
    assert envelopes["1"] == envelopes["2"]


def test_without_an_allowing_rule_the_command_is_refused_and_recorded(tmp_path: Path) -> None:
    work = tmp_path / "refused"
    work.mkdir()
    strict = profile(protocol="2")
    strict["permissions"] = {"mode": "workspace-write"}
    result = run(AGENT, strict, "write and run", work).result
    assert result.status == "done", result.error
    decisions = {p.name: p.decision for p in result.meta.permissions or []}
    assert decisions == {"write_text_file": "allowed", "run_command": "rejected"}
    assert "permission request refused" in result.summary


@pytest.mark.parametrize("network", ["on", "off"])
def test_a_stdio_only_v2_agent_gets_the_tools_through_the_relay(
    tmp_path: Path, network: str
) -> None:
    work = tmp_path / "stdio"
    work.mkdir()
    stdio_only = profile(protocol="2", env={"TS_AGENT_MCP": "stdio"}, sandbox={"network": network})
    done = run(AGENT, stdio_only, "write and run", work)
    assert_served(done.result, work)
    assert (done.result.meta.sandbox or {})["network"] is (network == "on")
    (new,) = [m for m in done.outgoing() if m.get("method") == "session/new"]
    (server,) = new["params"]["mcpServers"]
    assert server["type"] == "stdio" and server["args"][:2] == [
        "-m",
        "acp_bridge._acp.services.mcp_relay",
    ]
    assert server["args"][2].startswith("unix:")  # the run's private /tmp: any network


def test_a_v2_session_is_resumed_for_a_follow_up_in_a_new_process(tmp_path: Path) -> None:
    work = tmp_path / "resume"
    work.mkdir()
    first = run(AGENT, profile(protocol="2"), "write and run", work).result
    assert_served(first, work)
    (work / "from-ts-agent.txt").unlink()
    again = run(AGENT, profile(protocol="2"), "again", work, resume=first.meta.session_id)
    assert_served(again.result, work)
    meta = again.result.meta
    assert (meta.session_id, meta.session_method) == (first.meta.session_id, "session/resume")
    (resume,) = [m for m in again.outgoing() if m.get("method") == "session/resume"]
    assert "replayFrom" not in resume["params"]
    (server,) = resume["params"]["mcpServers"]  # the tools again, for the new process
    assert server["name"] == "acp-bridge"


@pytest.mark.parametrize(("protocol", "spoken"), [("1", 1), ("2", 2), ("auto", 2)])
def test_a_config_option_is_read_and_set_as_each_versions_schema_says(
    tmp_path: Path, protocol: str, spoken: int
) -> None:
    work = tmp_path / "options"
    work.mkdir()
    extra = {"services": "mcp"} if protocol == "1" else {}
    chosen = profile(protocol=protocol, session={"config_options": {"effort": "low"}}, **extra)
    done = run(AGENT, chosen, "write and run", work)
    result = done.result
    assert_served(result, work)
    assert result.meta.protocol_version == spoken
    assert result.meta.config_options == {"effort": "low"}
    assert not result.meta.warnings  # the SDK's agents need no tolerance
    (sent,) = [
        m["params"] for m in done.outgoing() if m.get("method") == "session/set_config_option"
    ]
    tag = {"type": "id"} if spoken == 2 else {}
    assert sent == {
        "sessionId": result.meta.session_id,
        "configId": "effort",
        "value": "low",
        **tag,
    }
