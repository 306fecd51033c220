"""What the bridge sends while it sets a session up, seen by a spy agent (the fault agent in
``ok`` mode, recording every message it receives): MCP servers, additional directories, the
configured auth method, mode / model / config options, the output_schema repair turn — each
only when the agent advertises it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode
from tests.conftest import AgentHarness

FAST = {"startup": 5, "session": 5, "run": 10, "cancel_grace": 0.5, "shutdown_grace": 0.5}


def spy(
    harness: AgentHarness,
    mode: str = "ok",
    *,
    init_reply: dict[str, Any] | None = None,
    session_reply: dict[str, Any] | None = None,
    output_schema: str | None = None,
    **profile: Any,
) -> tuple[SubtaskResult, list[dict[str, Any]]]:
    """Run the spy once; the envelope and every message it received, in order."""
    logs = harness.root / "spy"  # writable for the agent, in its sandbox: its state
    log = logs / f"spy-{len(list(harness.root.glob('spy/spy-*')))}.jsonl"
    env = {
        "FAULT_AGENT_LOG": str(log),
        "FAULT_AGENT_INIT": json.dumps(init_reply or {}),
        "FAULT_AGENT_SESSION": json.dumps(session_reply or {}),
        **profile.pop("env", {}),
    }
    sandbox = {"state": [str(logs)]}
    config = harness.fault(mode, env=env, timeouts=FAST, sandbox=sandbox, **profile)
    result = harness.run("fault", "go", config, output_schema=output_schema)
    received = [json.loads(line) for line in log.read_text().splitlines()]
    return result, received


def sent(received: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in received if m.get("method") == method]


def methods(received: list[dict[str, Any]]) -> list[str]:
    return [m["method"] for m in received if "method" in m]


def test_mcp_servers_are_forwarded_and_their_secrets_kept_out_of_the_transcript(
    harness: AgentHarness,
) -> None:
    os.environ["SPY_MCP_TOKEN"] = "tok-1234567890"
    try:
        servers = [
            {"name": "files", "command": "mcp-files", "args": ["--root", "."],
             "env": {"API_TOKEN": "${SPY_MCP_TOKEN}", "LEVEL": "debug"}},
            {"name": "web", "type": "http", "url": "http://127.0.0.1:9/mcp",
             "headers": {"Authorization": "Bearer hdr-secret-value"}},
        ]  # fmt: skip
        result, received = spy(harness, mcp_servers=servers)
    finally:
        del os.environ["SPY_MCP_TOKEN"]
    assert result.status == "done", result.error
    [new] = sent(received, "session/new")
    assert new["mcpServers"] == [
        {"name": "files", "command": "mcp-files", "args": ["--root", "."],
         "env": [{"name": "API_TOKEN", "value": "tok-1234567890"},
                 {"name": "LEVEL", "value": "debug"}]},
        {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
         "headers": [{"name": "Authorization", "value": "Bearer hdr-secret-value"}]},
    ]  # fmt: skip
    transcript = Path(result.meta.transcript or "").read_text()
    assert "tok-1234567890" not in transcript and "hdr-secret-value" not in transcript
    assert "debug" in transcript  # not a secret: neither its name nor its origin says so


def test_additional_directories_only_when_advertised(harness: AgentHarness, tmp_path: Path) -> None:
    other = tmp_path / "reference"
    other.mkdir()
    roots = {"read_roots": [str(harness.workspace), str(other)]}
    _, without = spy(harness, **roots)
    assert "additionalDirectories" not in sent(without, "session/new")[0]
    advertised = {"agentCapabilities": {"sessionCapabilities": {"additionalDirectories": {}}}}
    _, received = spy(harness, init_reply=advertised, **roots)
    assert sent(received, "session/new")[0]["additionalDirectories"] == [str(other.resolve())]


def test_the_configured_auth_method_is_used_before_session_new(harness: AgentHarness) -> None:
    methods_offered = {
        "authMethods": [
            {"id": "login", "name": "Browser"},
            {"id": "key", "name": "Key", "type": "env_var", "vars": [{"name": "SPY_KEY"}]},
        ]
    }
    result, received = spy(
        harness, init_reply=methods_offered, auth={"method": "key"}, env={"SPY_KEY": "k-1234"}
    )
    assert result.status == "done", result.error
    assert methods(received)[:3] == ["initialize", "authenticate", "session/new"]
    assert sent(received, "authenticate") == [{"methodId": "key"}]
    missing, _ = spy(harness, init_reply=methods_offered, auth={"method": "sso"})
    assert missing.meta.error_code == ErrorCode.AUTH_REQUIRED
    assert "'sso' is not offered by the agent (offered: login, key)" in missing.error


def test_mode_model_and_config_options_are_set_when_offered(harness: AgentHarness) -> None:
    offered = {
        "modes": {"currentModeId": "default", "availableModes": [
            {"id": "default", "name": "Default"}, {"id": "careful", "name": "Careful"}]},
        "configOptions": [
            {"id": "model", "name": "Model", "type": "select", "category": "model",
             "currentValue": "m1", "options": [{"value": "m1"}, {"value": "m2"}]},
            {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": False},
        ],
    }  # fmt: skip
    wanted = {"mode": "careful", "model": "m2", "config_options": {"fast": True, "nope": "x"}}
    result, received = spy(harness, session_reply=offered, session=wanted)
    assert result.status == "done", result.error
    assert sent(received, "session/set_mode") == [
        {"sessionId": "fault_session_1", "modeId": "careful"}
    ]
    assert sent(received, "session/set_config_option") == [
        {"sessionId": "fault_session_1", "configId": "model", "value": "m2"},
        {"sessionId": "fault_session_1", "configId": "fast", "value": True, "type": "boolean"},
    ]
    assert any("'nope' is not offered" in w for w in result.meta.warnings or [])
    # Nothing offered: nothing is sent, and the envelope says what was left as it was.
    bare, quiet = spy(harness, session=wanted)
    assert sent(quiet, "session/set_mode") == sent(quiet, "session/set_config_option") == []
    assert len(bare.meta.warnings or []) == 4  # mode, model, and both options


def test_the_output_schema_repair_turn_happens_in_the_same_session(
    harness: AgentHarness,
) -> None:
    result, received = spy(harness, "json-on-second-try", output_schema="any.json.v1")
    assert result.status == "done" and result.output == {"ok": True, "value": 7}
    prompts = sent(received, "session/prompt")
    assert len(prompts) == 2 and {p["sessionId"] for p in prompts} == {"fault_session_1"}
    assert "does not satisfy the output contract any.json.v1" in prompts[1]["prompt"][0]["text"]
    no_repair, _ = spy(harness, "json-on-second-try", output_schema="x.v1", repair_turns=0)
    assert no_repair.meta.error_code == ErrorCode.OUTPUT_SCHEMA
    assert no_repair.output == "Sure! Here it is."
