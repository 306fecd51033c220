"""What the bridge sends while it sets a session up, seen by the spy agent (which records
every message it receives): MCP servers, additional directories, the configured auth method,
mode / model / config options — each only when the agent advertises it; and the
output_schema repair turn, in the same session."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode
from tests.conftest import AgentHarness
from tests.spy import Spy

FAST = {"startup": 5, "session": 5, "run": 10, "cancel_grace": 0.5, "shutdown_grace": 0.5}


def run_spy(
    spy: Spy,
    *,
    advertise: dict[str, Any] | None = None,
    offer: dict[str, Any] | None = None,
    **profile: Any,
) -> tuple[SubtaskResult, list[dict[str, Any]]]:
    """Run the spy once; ``advertise`` goes into its initialize reply, ``offer`` into its
    session/new reply. The envelope and every message it received, in order."""
    spy.record.unlink(missing_ok=True)
    script = {"initialize": advertise or {}, "session": offer or {}}
    config = spy.config(script, timeouts=FAST, **profile)
    result = spy.harness.run("spy", "go", config)
    return result, spy.received()


def sent(received: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in received if m.get("method") == method]


def methods(received: list[dict[str, Any]]) -> list[str]:
    return [m["method"] for m in received if "method" in m]


def test_mcp_servers_are_forwarded_and_their_secrets_kept_out_of_the_transcript(
    spy: Spy,
) -> None:
    os.environ["SPY_MCP_TOKEN"] = "tok-1234567890"
    try:
        servers = [
            {"name": "files", "command": "mcp-files", "args": ["--root", "."],
             "env": {"API_TOKEN": "${SPY_MCP_TOKEN}", "LEVEL": "debug"}},
            {"name": "web", "type": "http", "url": "http://127.0.0.1:9/mcp",
             "headers": {"Authorization": "Bearer hdr-secret-value"}},
        ]  # fmt: skip
        result, received = run_spy(spy, mcp_servers=servers)
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


def test_additional_directories_only_when_advertised(spy: Spy, tmp_path: Path) -> None:
    other = tmp_path / "reference"
    other.mkdir()
    roots = {"read_roots": [str(spy.harness.workspace), str(other)]}
    _, without = run_spy(spy, **roots)
    assert "additionalDirectories" not in sent(without, "session/new")[0]
    advertised = {"agentCapabilities": {"sessionCapabilities": {"additionalDirectories": {}}}}
    _, received = run_spy(spy, advertise=advertised, **roots)
    assert sent(received, "session/new")[0]["additionalDirectories"] == [str(other.resolve())]


def test_the_configured_auth_method_is_used_before_session_new(spy: Spy) -> None:
    methods_offered = {
        "authMethods": [
            {"id": "login", "name": "Browser"},
            {"id": "key", "name": "Key", "type": "env_var", "vars": [{"name": "SPY_KEY"}]},
        ]
    }
    result, received = run_spy(
        spy, advertise=methods_offered, auth={"method": "key"}, env={"SPY_KEY": "k-1234"}
    )
    assert result.status == "done", result.error
    assert methods(received)[:3] == ["initialize", "authenticate", "session/new"]
    assert sent(received, "authenticate") == [{"methodId": "key"}]
    missing, _ = run_spy(spy, advertise=methods_offered, auth={"method": "sso"})
    assert missing.meta.error_code == ErrorCode.AUTH_REQUIRED
    assert "'sso' is not offered by the agent (offered: login, key)" in missing.error


def test_auth_required_on_the_prompt_ends_the_run_auth_required_naming_the_fix(
    spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # claude-agent-acp and fast-agent without a key: session/new works, the prompt -32000s.
    error = {"code": -32000, "message": "Authentication required"}
    monkeypatch.delenv("SPY_KEY", raising=False)
    monkeypatch.setenv("SPY_TOKEN", "t-1234")  # on the host, but not passed to the agent
    script = {"errors": {"session/prompt": error}}
    auth = {"env": ["SPY_KEY", "SPY_TOKEN"]}
    result = spy.harness.run("spy", "go", spy.config(script, timeouts=FAST, auth=auth))
    assert result.meta.error_code == ErrorCode.AUTH_REQUIRED
    assert "session/prompt" in result.error and "Authentication required" in result.error
    assert "set SPY_KEY or SPY_TOKEN" in result.error
    assert "SPY_TOKEN is set here but not passed to the agent (env_passthrough)" in result.error


def test_mode_model_and_config_options_are_set_when_offered(spy: Spy) -> None:
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
    result, received = run_spy(spy, offer=offered, session=wanted)
    assert result.status == "done", result.error
    assert sent(received, "session/set_mode") == [
        {"sessionId": "spy-session-1", "modeId": "careful"}
    ]
    assert sent(received, "session/set_config_option") == [
        {"sessionId": "spy-session-1", "configId": "model", "value": "m2"},
        {"sessionId": "spy-session-1", "configId": "fast", "value": True, "type": "boolean"},
    ]
    assert any("'nope' is not offered" in w for w in result.meta.warnings or [])
    # Nothing offered: nothing is sent, and the envelope says what was left as it was.
    bare, quiet = run_spy(spy, session=wanted)
    assert sent(quiet, "session/set_mode") == sent(quiet, "session/set_config_option") == []
    assert len(bare.meta.warnings or []) == 4  # mode, model, and both options


def test_the_output_schema_repair_turn_happens_in_the_same_session(
    harness: AgentHarness,
) -> None:
    config = harness.fault("json-on-second-try", timeouts=FAST)
    result = harness.run("fault", "go", config, output_schema="any.json.v1")
    assert result.status == "done" and result.output == {"ok": True, "value": 7}
    lines = Path(result.meta.transcript or "").read_text().splitlines()
    prompts = [
        m["msg"]["params"]
        for m in map(json.loads, lines)
        if m["dir"] == "out" and m["msg"].get("method") == "session/prompt"
    ]
    assert len(prompts) == 2 and {p["sessionId"] for p in prompts} == {"fault_session_1"}
    assert "does not satisfy the output contract any.json.v1" in prompts[1]["prompt"][0]["text"]
    config = harness.fault("json-on-second-try", timeouts=FAST, repair_turns=0)
    no_repair = harness.run("fault", "go", config, output_schema="x.v1")
    assert no_repair.meta.error_code == ErrorCode.OUTPUT_SCHEMA
    assert no_repair.output == "Sure! Here it is."
