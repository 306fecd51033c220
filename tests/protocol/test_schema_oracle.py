"""Every message the bridge sends validates against the official SDK's schema (acp.schema),
field by field: the SDK's models are lenient, so we also check that re-dumping them keeps
every value we sent (nothing silently dropped or defaulted)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import acp.schema as S
import pytest

from tests.conftest import AGENTS, AgentHarness

REQUESTS: dict[str, Any] = {
    "initialize": S.InitializeRequest,
    "authenticate": S.AuthenticateRequest,
    "session/new": S.NewSessionRequest,
    "session/prompt": S.PromptRequest,
    "session/set_mode": S.SetSessionModeRequest,
    "session/close": S.CloseSessionRequest,
    "session/cancel": S.CancelNotification,
}
REPLIES: dict[str, Any] = {
    "session/request_permission": S.RequestPermissionResponse,
    "fs/read_text_file": S.ReadTextFileResponse,
    "fs/write_text_file": S.WriteTextFileResponse,
    "terminal/create": S.CreateTerminalResponse,
    "terminal/output": S.TerminalOutputResponse,
    "terminal/wait_for_exit": S.WaitForTerminalExitResponse,
    "terminal/kill": S.KillTerminalResponse,
    "terminal/release": S.ReleaseTerminalResponse,
}


def _kept(sent: Any, dumped: Any, where: str) -> None:
    if isinstance(sent, dict):
        assert isinstance(dumped, dict), where
        for key, value in sent.items():
            if value is None and key not in dumped:
                continue  # an explicit null the schema allows; the SDK drops nulls
            assert key in dumped, f"{where}.{key} is not in the schema"
            _kept(value, dumped[key], f"{where}.{key}")
    elif isinstance(sent, list):
        assert isinstance(dumped, list) and len(dumped) == len(sent), where
        for index, (a, b) in enumerate(zip(sent, dumped, strict=True)):
            _kept(a, b, f"{where}[{index}]")
    else:
        assert sent == dumped, f"{where}: sent {sent!r}, schema reads {dumped!r}"


def validate(model: Any, data: dict[str, Any], where: str) -> None:
    dumped = model.model_validate(data).model_dump(mode="json", by_alias=True, exclude_none=True)
    _kept(data, dumped, where)


def check_transcript(path: Path) -> int:
    """Validate every message we sent in one transcript; returns how many were checked."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    agent_requests = {
        m["msg"]["id"]: m["msg"]["method"]
        for m in lines
        if m["dir"] == "in" and "msg" in m and "method" in m["msg"] and "id" in m["msg"]
    }
    checked = 0
    for entry in lines:
        if entry["dir"] != "out":
            continue
        message = entry["msg"]
        assert message["jsonrpc"] == "2.0"
        if "method" in message:
            method = message["method"]
            if method == "session/set_config_option":
                model = (
                    S.SetSessionConfigOptionBooleanRequest
                    if message["params"].get("type") == "boolean"
                    else S.SetSessionConfigOptionSelectRequest
                )
            else:
                model = REQUESTS[method]
            validate(model, message["params"], method)
        elif "result" in message:
            method = agent_requests[message["id"]]
            validate(REPLIES[method], message["result"], f"reply to {method}")
        else:
            error = S.Error.model_validate(message["error"])
            assert isinstance(error.code, int) and error.message
        checked += 1
    return checked


def test_demo_agent_conversation_validates(harness: AgentHarness) -> None:
    (harness.workspace / "notes.txt").write_text("notes\n")
    config = harness.config(
        {
            "demo": {
                "command": sys.executable,
                "args": ["-m", "acp_bridge._demo_agent"],
                "session": {"mode": "careful", "config_options": {"style": "shouty"}},
            }
        }
    )
    result = harness.run(
        "demo", "read notes.txt\nwrite out.txt: x\nrun echo hi\nread missing.txt", config
    )
    assert result.status == "done", result.error
    assert result.output.startswith("NOTES")  # the style option reached the agent
    assert check_transcript(Path(result.meta.transcript or "")) >= 15


def test_sdk_agent_conversation_validates(harness: AgentHarness) -> None:
    config = harness.config(
        {
            "sdk": {
                "command": sys.executable,
                "args": [str(AGENTS / "sdk_agent.py")],
                "session": {"mode": "plan"},
                "permissions": {"rules": [{"kind": "execute", "decision": "allow"}]},
            }
        }
    )
    result = harness.run("sdk", "write a.txt: 1\nrun true\nread a.txt", config)
    assert result.status == "done", result.error
    assert check_transcript(Path(result.meta.transcript or "")) >= 12


@pytest.mark.parametrize("mode", ["auth-env", "cancel-aware", "string-ids"])
def test_fault_agent_conversations_validate(harness: AgentHarness, mode: str) -> None:
    (harness.workspace / "hello.txt").write_text("hi\n")
    config = harness.fault(
        mode, env={"FAKE_AGENT_KEY": "k-0000"}, timeouts={"run": 1, "startup": 5}
    )
    result = harness.run("fault", "go", config)
    assert check_transcript(Path(result.meta.transcript or "")) >= 4
