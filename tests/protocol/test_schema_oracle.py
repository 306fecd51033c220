"""Every message the bridge sends validates against the official SDK's schema (acp.schema),
field by field: the SDK's models are lenient, so we also check that re-dumping them keeps
every value we sent (nothing silently dropped or defaulted).

``session/set_model`` is no longer in the SDK's schema (ACP removed the unstable model API);
what we send is checked against the definitions of the last schema that had it, kept in
tests/golden/schema/session-set_model.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import acp.schema as S
import anyio
import jsonschema
import pytest
from pydantic import TypeAdapter

from acp_bridge._acp.services.elicitation import ElicitationAnswer, ElicitationQuestion
from acp_bridge._acp.services.permissions import PermissionQuestion
from acp_bridge._entries.acp_spawn.admin import agent_logout, agent_sessions, delete_agent_session
from tests.conftest import AGENTS, AgentHarness
from tests.spy import Spy

SET_MODEL_SCHEMA = json.loads(
    (Path(__file__).parent.parent / "golden" / "schema" / "session-set_model.json").read_text()
)

REQUESTS: dict[str, Any] = {
    "initialize": S.InitializeRequest,
    "authenticate": S.AuthenticateRequest,
    "session/new": S.NewSessionRequest,
    "session/prompt": S.PromptRequest,
    "session/set_mode": S.SetSessionModeRequest,
    "session/close": S.CloseSessionRequest,
    "session/cancel": S.CancelNotification,
    "session/load": S.LoadSessionRequest,
    "session/resume": S.ResumeSessionRequest,
    "session/fork": S.ForkSessionRequest,
    "session/list": S.ListSessionsRequest,
    "session/delete": S.DeleteSessionRequest,
    "logout": S.LogoutRequest,
    "$/cancel_request": S.CancelRequestNotification,
}
ELICITATION_REPLIES: dict[str, Any] = {
    "accept": S.AcceptElicitationResponse,
    "decline": S.DeclineElicitationResponse,
    "cancel": S.CancelElicitationResponse,
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
    adapter: TypeAdapter[Any] = TypeAdapter(model)
    value = adapter.validate_python(data)
    _kept(data, adapter.dump_python(value, mode="json", by_alias=True, exclude_none=True), where)


_NEWER_SESSION_CAPS = {"notices", "compaction"}


def validate_request(method: str, params: dict[str, Any]) -> None:
    if method == "session/set_model":
        jsonschema.validate(params, SET_MODEL_SCHEMA)
        allowed = SET_MODEL_SCHEMA["$defs"]["SetSessionModelRequest"]["properties"]
        assert set(params) <= set(allowed), f"session/set_model: {set(params) - set(allowed)}"
    elif method == "session/set_config_option":
        model = (
            S.SetSessionConfigOptionBooleanRequest
            if params.get("type") == "boolean"
            else S.SetSessionConfigOptionSelectRequest
        )
        validate(model, params, method)
    elif method == "initialize" and _NEWER_SESSION_CAPS & set(
        params.get("clientCapabilities", {}).get("session") or {}
    ):
        # The Python SDK (0.12.1) predates notices and compaction (schema 1.22+): those two
        # are checked against the TypeScript SDK's v1 schema by tests/interop/test_ts_v2.py.
        caps = dict(params["clientCapabilities"])
        caps["session"] = {k: v for k, v in caps["session"].items() if k not in _NEWER_SESSION_CAPS}
        validate_request(method, {**params, "clientCapabilities": caps})
    elif method == "initialize" and params.get("protocolVersion") == 2:
        # Under `protocol: auto` one initialize asks for v2 and keeps the v1 keys for a v1
        # agent: the v1 part must be v1 (the v2 part is read by the official TypeScript SDK
        # in tests/interop/test_ts_v2.py); the v2 keys are exactly the v2 schema's.
        v1 = {k: v for k, v in params.items() if k not in ("info", "capabilities")}
        validate(REQUESTS[method], {**v1, "protocolVersion": 1}, method)
        assert set(params) - set(v1) == {"info", "capabilities"}
    else:
        validate(REQUESTS[method], params, method)


def validate_reply(method: str, result: dict[str, Any]) -> None:
    if method == "elicitation/create":
        validate(ELICITATION_REPLIES[result["action"]], result, f"reply to {method}")
    else:
        validate(REPLIES[method], result, f"reply to {method}")


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
            validate_request(message["method"], message["params"])
        elif "result" in message:
            validate_reply(agent_requests[message["id"]], message["result"])
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
                "args": ["-m", "acp_bridge._demo.agent"],
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
                # auto's one initialize carries v1's keys beside v2's: its v1 part is checked
                # (the demo agent's conversation checks the default, v1 alone)
                "protocol": "auto",
            }
        }
    )
    result = harness.run("sdk", "write a.txt: 1\nrun true\nread a.txt", config)
    assert result.status == "done", result.error
    assert result.meta.protocol_version == 1  # the SDK's agent answers 1
    assert check_transcript(Path(result.meta.transcript or "")) >= 12


@pytest.mark.parametrize("mode", ["auth-env", "cancel-aware", "string-ids"])
def test_fault_agent_conversations_validate(harness: AgentHarness, mode: str) -> None:
    (harness.workspace / "hello.txt").write_text("hi\n")
    config = harness.fault(
        mode, env={"FAKE_AGENT_KEY": "k-0000"}, timeouts={"run": 3, "startup": 5}
    )
    result = harness.run("fault", "go", config)
    assert check_transcript(Path(result.meta.transcript or "")) >= 4


MODELS = {"currentModelId": "a", "availableModels": [{"modelId": "a"}, {"modelId": "b"}]}
OPTIONS = [
    {"id": "brave", "name": "Brave", "type": "boolean", "currentValue": False},
    {
        "id": "effort",
        "name": "Effort",
        "type": "select",
        "currentValue": "low",
        "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}],
    },
]
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def test_spy_conversation_with_every_stable_method_validates(spy: Spy) -> None:
    """resume, set_mode, set_model, boolean and select options, permission, elicitation
    (accepted and declined), the agent's $/cancel_request (-32800) and close."""
    caps = {"sessionCapabilities": {"resume": {}, "close": {}}}
    permission = {
        "toolCall": {"toolCallId": "t1", "title": "Edit a", "kind": "edit"},
        "options": [
            {"optionId": "y", "name": "Yes", "kind": "allow_once"},
            {"optionId": "n", "name": "No", "kind": "reject_once"},
        ],
    }
    url = {"mode": "url", "message": "Log in", "elicitationId": "e", "url": "https://x.test/"}
    prompt = [
        {"request": "session/request_permission", "params": permission},
        {"request": "session/request_permission", "params": permission, "cancel": True},
        {
            "request": "elicitation/create",
            "params": {"mode": "form", "message": "Name?", "requestedSchema": FORM},
        },
        {"request": "elicitation/create", "params": url},
    ]
    script = {
        "initialize": {"agentCapabilities": caps},
        "setup": {
            "modes": {"currentModeId": "m1", "availableModes": [{"id": "m1"}, {"id": "m2"}]},
            "models": MODELS,
        },
        "session": {"configOptions": OPTIONS},
        "prompt": prompt,
    }
    # session/resume's reply carries no config options in this script: the spy's list
    # comes with session/new only, so give the resumed session its options through setup.
    script["setup"]["configOptions"] = OPTIONS

    async def answer(question: ElicitationQuestion) -> ElicitationAnswer:
        if question.mode == "form":
            return ElicitationAnswer("accept", {"name": "Ada"})
        return ElicitationAnswer("decline")

    asked: list[str] = []

    async def permit(question: PermissionQuestion) -> bool:
        # The first request is answered; the second stays pending until the spy cancels it
        # ($/cancel_request right after it), so the -32800 reply never races an answer.
        asked.append(question.title)
        if len(asked) > 1:
            await anyio.sleep_forever()
        return True

    rules = [{"kind": "edit", "decision": "ask"}]
    config = spy.config(script, permissions={"mode": "approve-all", "rules": rules})
    result = spy.harness.run(
        "spy",
        "go",
        config,
        permission_hook=permit,
        resume="s-old",
        mode="m2",
        model="b",
        config_options={"brave": True, "effort": "high"},
        elicitation_hook=answer,
    )
    assert result.status == "done", result.error
    methods = spy.methods()
    for method in ("session/resume", "session/set_mode", "session/set_model", "session/close"):
        assert method in methods
    assert methods.count("session/set_config_option") == 2
    assert spy.reply_to("spy-1")["error"]["code"] == -32800
    assert check_transcript(Path(result.meta.transcript or "")) == 12


def test_spy_load_fork_and_cancel_request_validate(spy: Spy) -> None:
    caps = {"loadSession": True, "sessionCapabilities": {"fork": {}}}
    config = spy.config({"initialize": {"agentCapabilities": caps}})
    loaded = spy.harness.run("spy", "go", config, resume="s-old")
    forked = spy.harness.run("spy", "go", config, resume="s-old", fork=True, unstable=True)
    config = spy.config({"hang": ["session/new"]}, timeouts={"session": 0.5})
    cancelled = spy.harness.run("spy", "go", config)
    assert "$/cancel_request" in spy.methods()
    for result in (loaded, forked, cancelled):
        assert check_transcript(Path(result.meta.transcript or "")) >= 3


def test_session_list_delete_and_logout_validate(spy: Spy) -> None:
    caps = {"sessionCapabilities": {"list": {}, "delete": {}}, "auth": {"logout": {}}}
    sessions = [{"sessionId": f"s{i}", "cwd": "/w"} for i in range(3)]
    config = spy.config(
        {"initialize": {"agentCapabilities": caps}, "sessions": sessions, "pageSize": 2}
    )
    anyio.run(lambda: agent_sessions("spy", config=config))
    anyio.run(lambda: delete_agent_session("spy", "s1", config=config))
    anyio.run(lambda: agent_logout("spy", config=config))
    sent = [m for m in spy.received() if "method" in m]
    assert [m["method"] for m in sent].count("session/list") == 1  # filtered by cwd
    for message in sent:
        validate_request(message["method"], message["params"])
    assert {m["method"] for m in sent} == {"initialize", "session/list", "session/delete", "logout"}
