"""ACP v2 Preview on the raw wire, checked with the spy agent: negotiation both ways and a
version the bridge does not speak, the state_update lifecycle, upserts, the new permission
request shape, unknown `_` variants, both prompt-reply shapes, and MCP servers offered only
on the transports the agent advertised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_bridge._acp.turn.lifecycle import NO_MESSAGE_ID
from acp_bridge.errors import ErrorCode
from tests.spy import Spy

V2_INIT: dict[str, Any] = {
    "protocolVersion": 2,
    "info": {"name": "spy-v2", "version": "1"},
    "capabilities": {"session": {}},
}


def v2(script: dict[str, Any] | None = None, **init: Any) -> dict[str, Any]:
    """A spy script that speaks v2: its initialize reply, the prompt acknowledged at once."""
    caps = {"session": init.pop("session", {})}
    return {
        "initialize": {**V2_INIT, "capabilities": caps, **init},
        "prompt_reply": {"messageId": "user-1"},
        **(script or {}),
    }


def state(name: str, **extra: Any) -> dict[str, Any]:
    return {"update": {"sessionUpdate": "state_update", "state": name, **extra}}


def test_auto_asks_for_2_and_takes_1_from_a_v1_agent(spy: Spy) -> None:
    result = spy.harness.run("spy", "go", spy.config({"answer": "ONE"}, protocol="auto"))
    assert result.status == "done", result.error
    assert (result.output, result.meta.protocol_version) == ("ONE", 1)
    sent = spy.request("initialize")["params"]
    assert sent["protocolVersion"] == 2
    # One initialize for both: the v1 keys for a v1 agent, the v2 keys for a v2 one.
    assert {"clientCapabilities", "clientInfo", "info", "capabilities"} <= set(sent)


def test_auto_speaks_2_with_a_v2_agent_and_the_turn_ends_at_idle(spy: Spy) -> None:
    script = v2({"prompt": [state("running"), {"say": "TWO", "messageId": "m1"}], "answer": ""})
    result = spy.harness.run("spy", "go", spy.config(script, protocol="auto"))
    assert result.status == "done", result.error
    assert (result.output, result.meta.protocol_version) == ("TWO", 2)
    assert result.meta.stop_reason == "end_turn"
    prompt = spy.request("session/prompt")["params"]
    assert isinstance(prompt.get("idempotencyKey"), str)  # a retried prompt is safe
    assert "fs" not in spy.request("initialize")["params"]["capabilities"]  # v2 has no fs/*


def test_protocol_1_refuses_an_agent_that_answers_2(spy: Spy) -> None:
    result = spy.harness.run("spy", "go", spy.config(v2(), protocol="1"))
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert "version 2" in result.error and "version 1 (profile protocol)" in result.error
    assert spy.request("initialize")["params"]["protocolVersion"] == 1


def test_protocol_2_refuses_a_v1_agent(spy: Spy) -> None:
    result = spy.harness.run("spy", "go", spy.config({}, protocol="2"))
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert "speaks ACP protocol version 1" in result.error


@pytest.mark.parametrize("version", [0, 3])
def test_a_version_the_bridge_does_not_speak_is_a_clear_error(spy: Spy, version: int) -> None:
    result = spy.harness.run(
        "spy", "go", spy.config({"initialize": {"protocolVersion": version}}, protocol="auto")
    )
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert f"speaks ACP protocol version {version}" in result.error
    assert "acp-bridge speaks version 1 or 2" in result.error


def test_the_agents_unsupported_version_error_names_its_versions(spy: Spy) -> None:
    error = {"code": -32022, "message": "Unsupported", "data": {"requested": 2, "supported": [3]}}
    result = spy.harness.run(
        "spy", "go", spy.config({"errors": {"initialize": error}}, protocol="auto")
    )
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert "does not speak ACP protocol version 2 (it speaks [3])" in result.error


@pytest.mark.parametrize("reply", [{}, {"messageId": "user-1"}])
def test_both_prompt_reply_shapes_are_accepted(spy: Spy, reply: dict[str, Any]) -> None:
    script = v2({"prompt_reply": reply, "prompt": [state("running")], "answer": "OK"})
    result = spy.harness.run("spy", "go", spy.config(script, protocol="auto"))
    assert (result.status, result.output) == ("done", "OK"), result.error
    # The v2 schema requires the messageId: a reply without it is accepted, and counted.
    warned = [w for w in result.meta.warnings or [] if "messageId" in w]
    assert warned == ([] if reply else [NO_MESSAGE_ID])


def test_a_stale_idle_before_running_does_not_end_the_turn(spy: Spy) -> None:
    steps = [
        {"update": {"sessionUpdate": "state_update", "state": "idle"}},  # before work began
        state("running"),
        {"say": "LATE ANSWER", "messageId": "m1"},
    ]
    result = spy.harness.run(
        "spy", "go", spy.config(v2({"prompt": steps, "answer": ""}), protocol="auto")
    )
    assert (result.status, result.output) == ("done", "LATE ANSWER"), result.error


def test_an_idle_stop_reason_maps_like_a_v1_reply(spy: Spy) -> None:
    script = v2({"prompt": [state("running")], "answer": "partial", "stop": "max_tokens"})
    result = spy.harness.run("spy", "go", spy.config(script, protocol="auto"))
    assert result.status == "failed"
    assert (result.meta.error_code, result.output) == (ErrorCode.MAX_TOKENS, "partial")


def test_upserts_missing_null_and_append(spy: Spy) -> None:
    update = lambda **body: {"update": {"sessionUpdate": "tool_call_update", **body}}  # noqa: E731
    diff = {
        "type": "diff",
        "changes": [{"operation": "modify", "path": "/w/a.py"}],
        "patch": {"format": "git_patch", "text": "diff --git a/w/a.py b/w/a.py\n"},
    }
    steps = [
        state("running"),
        # The first update of an id creates the tool call (no tool_call in v2).
        update(toolCallId="t1", title="Edit a.py", name="edit_file", kind="edit"),
        update(toolCallId="t1", status="in_progress"),  # title, kind: missing = unchanged
        {
            "update": {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": "t1",
                "content": diff,
            }
        },
        update(toolCallId="t1", title=None, status="completed"),  # null clears the title
        {
            "update": {
                "sessionUpdate": "agent_message",
                "messageId": "m1",
                "content": [{"type": "text", "text": "draft"}],
            }
        },
        {
            "update": {
                "sessionUpdate": "agent_message",
                "messageId": "m1",
                "content": [{"type": "text", "text": "FINAL"}],
            }
        },
        {
            "update": {
                "sessionUpdate": "agent_message",
                "messageId": "m2",
                "content": [{"type": "text", "text": "gone"}],
            }
        },
        {"update": {"sessionUpdate": "agent_message", "messageId": "m2", "content": None}},
    ]
    result = spy.harness.run(
        "spy", "go", spy.config(v2({"prompt": steps, "answer": ""}), protocol="auto")
    )
    assert result.status == "done", result.error
    assert result.output == "FINAL"  # whole-message upserts; m2 was cleared
    (call,) = result.meta.tool_calls or []
    assert (call.tool_call_id, call.title, call.name, call.kind, call.status) == (
        "t1", "", "edit_file", "edit", "completed",
    )  # fmt: skip
    assert result.meta.reported_changes == [
        {"operation": "modify", "path": "/w/a.py", "tool_call_id": "t1"}
    ]
    assert result.meta.reported_patch == "diff --git a/w/a.py b/w/a.py\n"
    assert any("did not measure: /w/a.py" in w for w in result.meta.warnings or [])


def test_requires_action_with_a_permission_in_the_v2_shape(spy: Spy) -> None:
    request = {
        "title": "Run the tests",
        "subject": {"type": "command", "command": "rm -rf build", "cwd": "/w", "toolCallId": "t9"},
        "options": [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
        ],
    }
    steps = [
        state("running"),
        state("requires_action"),  # never the end of a turn
        {"request": "session/request_permission", "params": request},
        state("running"),
    ]
    result = spy.harness.run("spy", "go", spy.config(v2({"prompt": steps}), protocol="auto"))
    assert result.status == "done", result.error
    (decision,) = result.meta.permissions or []
    assert (decision.tool_call_id, decision.title, decision.kind) == (
        "t9",
        "Run the tests",
        "execute",
    )
    assert decision.decision == "rejected" and decision.option_id == "no"
    assert spy.reply_to("spy-2")["result"] == {"outcome": {"outcome": "selected", "optionId": "no"}}


def test_unknown_underscore_variants_are_kept_not_errors(spy: Spy) -> None:
    steps = [
        state("running"),
        {"update": {"sessionUpdate": "_vendor_progress", "percent": 50}},
        state("_vendor_waiting"),
        {"say": "DONE", "messageId": "m1"},
    ]
    result = spy.harness.run(
        "spy", "go", spy.config(v2({"prompt": steps, "answer": ""}), protocol="auto")
    )
    assert (result.status, result.output) == ("done", "DONE"), result.error
    assert result.meta.unknown_updates == {"_vendor_progress": 1}
    transcript = result.meta.transcript
    assert transcript is not None and "_vendor_progress" in Path(transcript).read_text()


@pytest.mark.parametrize(
    ("mcp", "offered"),
    [
        ({}, None),
        ({"http": {}}, "http"),
        ({"stdio": {}}, "stdio"),
        ({"http": {}, "stdio": {}}, "http"),
    ],
)
def test_mcp_servers_only_on_advertised_transports(
    spy: Spy, mcp: dict[str, Any], offered: str | None
) -> None:
    script = v2({"prompt": [state("running")], "answer": "OK"}, session={"mcp": mcp})
    result = spy.harness.run("spy", "go", spy.config(script, protocol="auto"))
    assert result.status == "done", result.error
    servers = spy.request("session/new")["params"]["mcpServers"]
    assert [s["type"] for s in servers] == ([offered] if offered else [])
    if offered == "stdio":
        (server,) = servers
        assert server["args"][:2] == ["-m", "acp_bridge._acp.services.mcp_relay"]
        assert server["env"][0]["name"] == "ACP_BRIDGE_SERVICES_TOKEN"


def test_a_v1_agent_gets_the_mcp_server_only_when_the_profile_says_so(spy: Spy) -> None:
    caps = {"agentCapabilities": {"mcpCapabilities": {"http": True}}}
    spy.harness.run("spy", "go", spy.config({"initialize": caps}))
    assert spy.request("session/new")["params"]["mcpServers"] == []
    spy.record.unlink()
    result = spy.harness.run("spy", "go", spy.config({"initialize": caps}, services="mcp"))
    assert result.status == "done", result.error
    (server,) = spy.request("session/new")["params"]["mcpServers"]
    assert server["type"] == "http" and server["name"] == "acp-bridge"
    sent = spy.request("initialize")["params"]["clientCapabilities"]
    assert sent["fs"] == {"readTextFile": False, "writeTextFile": False} and not sent["terminal"]
