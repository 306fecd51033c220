"""The bridge's files and terminals as MCP tools, reached from inside the agent's sandbox
whatever its network setting (acp_bridge/_acp/services/mcp_transport.py).

A spy agent speaking v2 calls the tools of the ``acp-bridge`` server it was handed in
``session/new`` — through the stdio relay it starts inside its own sandbox, or over HTTP —
and the bridge judges and records each call. With ``network: off`` (bubblewrap's
``--unshare-net``, Landlock's TCP ban) the relay reaches the bridge over a unix socket in the
run's private ``/tmp``; an agent that takes only HTTP servers there is told, never silently
left without tools.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_bridge._acp.services.mcp_transport import NO_MCP, ONLY_HTTP
from acp_bridge.envelope import SubtaskResult
from tests.sandbox_modes import auto_mode
from tests.spy import Spy

RUN_RULE = {"kind": "execute", "name": "run_command", "decision": "allow"}
CONTENT = "through the bridge's tools\n"


def v2_script(mcp: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A v2 spy that takes MCP servers on ``mcp``'s transports and calls ``calls`` in its turn."""
    return {
        "initialize": {
            "protocolVersion": 2,
            "info": {"name": "spy-v2", "version": "1"},
            "capabilities": {"session": {"mcp": mcp}},
        },
        "prompt_reply": {"messageId": "user-1"},
        "prompt": [
            {"update": {"sessionUpdate": "state_update", "state": "running"}},
            {"mcp": calls},
        ],
    }


def write_and_run(workspace: Path) -> list[dict[str, Any]]:
    return [
        {"tool": "write_text_file",
         "arguments": {"path": str(workspace / "via-mcp.txt"), "content": CONTENT}},
        {"tool": "run_command", "arguments": {"command": "cat", "args": ["via-mcp.txt"]}},
    ]  # fmt: skip


def run(spy: Spy, script: dict[str, Any], mode: str, network: str, **profile: Any) -> Any:
    sandbox = {"mode": mode, "network": network}
    permissions = profile.pop("permissions", {"mode": "workspace-write", "rules": [RUN_RULE]})
    config = spy.config(
        script, sandbox=sandbox, permissions=permissions, protocol="auto", **profile
    )
    return spy.harness.run("spy", "use the tools", config)


def offered(spy: Spy) -> list[dict[str, Any]]:
    return list(spy.request("session/new")["params"]["mcpServers"])


def assert_served(result: SubtaskResult, workspace: Path) -> None:
    """The file written and the command run through the tools, each decided and recorded."""
    assert result.status == "done", (result.error, result.meta.stderr_tail)
    wrote, ran = json.loads(result.output)
    assert wrote.get("isError") is False, wrote
    assert ran["structuredContent"]["exit_code"] == 0, ran
    assert ran["structuredContent"]["output"] == CONTENT
    assert (workspace / "via-mcp.txt").read_text() == CONTENT
    ledger = [(p.name, p.kind, p.decision) for p in result.meta.permissions or []]
    assert ledger == [("write_text_file", "edit", "allowed"), ("run_command", "execute", "allowed")]
    (terminal,) = result.meta.terminals or []
    assert (terminal.command, terminal.exit_code) == ("cat via-mcp.txt", 0)
    assert not [w for w in result.meta.warnings or [] if w.startswith("services:")]


@pytest.mark.parametrize(
    ("mode", "network"),
    [("auto", "on"), ("bwrap", "off"), ("landlock", "on"), ("landlock", "off")],
)
def test_a_stdio_only_agent_gets_files_and_commands_through_the_relay(
    spy: Spy, mode: str, network: str
) -> None:
    workspace = spy.harness.workspace
    result = run(spy, v2_script({"stdio": {}}, write_and_run(workspace)), mode, network)
    assert_served(result, workspace)
    sandbox = result.meta.sandbox or {}
    assert sandbox["mode"] == (auto_mode() if mode == "auto" else mode)
    assert sandbox["network"] is (network == "on")
    (server,) = offered(spy)
    assert server["type"] == "stdio" and server["args"][:2] == [
        "-m",
        "acp_bridge._acp.services.mcp_relay",
    ]
    # A socket in the run's private /tmp, where the sandbox shows it (bwrap binds it at /tmp).
    target = server["args"][2]
    assert target.startswith("unix:/tmp/acp-bridge-services-" if sandbox["mode"] == "bwrap"
                             else "unix:"), target  # fmt: skip
    assert target.endswith(".sock")


def test_without_an_allowing_rule_the_relay_carries_the_refusal(spy: Spy) -> None:
    workspace = spy.harness.workspace
    script = v2_script({"stdio": {}}, write_and_run(workspace))
    result = run(spy, script, "auto", "off", permissions={"mode": "workspace-write"})
    assert result.status == "done", result.error
    wrote, ran = json.loads(result.output)
    assert wrote.get("isError") is False and ran["isError"] is True
    assert "refused by the permission policy" in ran["content"][0]["text"]
    decisions = {p.name: p.decision for p in result.meta.permissions or []}
    assert decisions == {"write_text_file": "allowed", "run_command": "rejected"}


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
def test_with_the_network_off_an_agent_taking_both_gets_the_relay(spy: Spy, mode: str) -> None:
    workspace = spy.harness.workspace
    script = v2_script({"http": {}, "stdio": {}}, write_and_run(workspace))
    result = run(spy, script, mode, "off")
    assert_served(result, workspace)
    assert [s["type"] for s in offered(spy)] == ["stdio"]


@pytest.mark.parametrize("mode", ["auto", "landlock"])
def test_with_the_network_on_an_http_agent_gets_the_loopback_url(spy: Spy, mode: str) -> None:
    workspace = spy.harness.workspace
    result = run(spy, v2_script({"http": {}}, write_and_run(workspace)), mode, "on")
    assert_served(result, workspace)
    (server,) = offered(spy)
    assert server["type"] == "http" and server["url"].startswith("http://127.0.0.1:")


@pytest.mark.parametrize("mode", ["bwrap", "landlock"])
def test_an_http_only_agent_under_network_off_is_told_not_left_silent(spy: Spy, mode: str) -> None:
    script = v2_script({"http": {}}, [])
    script["prompt"] = script["prompt"][:1]
    script["answer"] = "worked without tools"
    result = run(spy, script, mode, "off")
    assert (result.status, result.output) == ("done", "worked without tools"), result.error
    assert offered(spy) == []
    assert ONLY_HTTP in (result.meta.warnings or [])
    assert "sandbox.network" in ONLY_HTTP


@pytest.mark.parametrize("capabilities", [{"session": {"mcp": {}}}, {"session": {}}, {}])
def test_a_v2_agent_taking_no_mcp_servers_is_told(spy: Spy, capabilities: dict[str, Any]) -> None:
    script = v2_script({}, [])
    script["initialize"]["capabilities"] = capabilities  # no transport named: none taken
    script["prompt"] = script["prompt"][:1]
    script["answer"] = "OK"
    result = run(spy, script, "auto", "on")
    assert result.status == "done", result.error
    assert offered(spy) == [] and NO_MCP in (result.meta.warnings or [])


def test_without_a_sandbox_the_relay_goes_over_loopback(spy: Spy) -> None:
    workspace = spy.harness.workspace
    result = run(spy, v2_script({"stdio": {}}, write_and_run(workspace)), "off", "on")
    assert_served(result, workspace)
    (server,) = offered(spy)
    assert server["args"][2].startswith("http://127.0.0.1:")
