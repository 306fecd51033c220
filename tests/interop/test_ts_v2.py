"""A v2 agent on the official TypeScript SDK (npm @agentclientprotocol/sdk 2.4.0, pinned;
tests/agents/ts_v2, installed by tests/interop/install.sh ts-v2): ACP v1 and the v2 Preview
behind the SDK's protocol router, one scenario on both. In its turn the agent writes a file
and runs a command through the bridge's MCP tools (the bridge's files and terminals offered
in session/new), inside the default sandbox, each call decided by the policy and listed in
the ledger. The two envelopes differ only in ``meta.protocol_version`` (and what is unique
to a run: task id, session id, times, paths).
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
