"""Golden wire messages recorded from real third-party agents must parse with our lean types.

``tests/golden/wire/<agent>/`` holds messages those agents actually sent us (recorded by the
interop tests with ``ACP_BRIDGE_RECORD_GOLDEN=1``; see tests/interop/harness.py). File names
say what each is: ``<method>.reply[.<stopReason>].json``, ``<method>[.<tool kind>].request.json``
or ``session-update.<kind>.json``. Each one is read with the bridge's own types
(``acp_bridge._acp.wire.schema``; updates through ``TurnCollector``) and, as an oracle, with the
official SDK's ``acp.schema`` models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from acp_bridge._acp.turn.turn_collector import TurnCollector
from acp_bridge._acp.wire import initialize_schema
from acp_bridge._acp.wire import schema as protocol
from acp_bridge._acp.wire.schema import parse_reply
from acp_bridge.events import EventSink

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "wire"
FILES = sorted(GOLDEN.glob("*/*.json"))

# method → (our model, the SDK's model name in acp.schema)
REPLIES: dict[str, tuple[type[BaseModel], str]] = {
    "initialize": (initialize_schema.InitializeResult, "InitializeResponse"),
    "session/new": (protocol.NewSessionResult, "NewSessionResponse"),
    "session/prompt": (protocol.PromptResult, "PromptResponse"),
}
REQUESTS: dict[str, tuple[type[BaseModel], str]] = {
    "session/request_permission": (protocol.RequestPermissionParams, "RequestPermissionRequest"),
    "fs/read_text_file": (protocol.ReadTextFileParams, "ReadTextFileRequest"),
    "fs/write_text_file": (protocol.WriteTextFileParams, "WriteTextFileRequest"),
    "terminal/create": (protocol.CreateTerminalParams, "CreateTerminalRequest"),
    "terminal/output": (protocol.TerminalIdParams, "TerminalOutputRequest"),
    "terminal/wait_for_exit": (protocol.TerminalIdParams, "WaitForTerminalExitRequest"),
    "terminal/release": (protocol.TerminalIdParams, "ReleaseTerminalRequest"),
    "terminal/kill": (protocol.TerminalIdParams, "KillTerminalRequest"),
}
METHOD_OF_SLUG = {m.replace("/", "-"): m for m in [*REPLIES, *REQUESTS, "session/update"]}


def describe(path: Path) -> tuple[str, str]:
    """(method, role) of a golden file: role is reply, request or update."""
    slug, *rest = path.name.removesuffix(".json").split(".")
    method = METHOD_OF_SLUG.get(slug)
    assert method is not None, f"{path.name}: unknown method slug {slug!r}"
    if method == "session/update":
        return method, "update"
    role = rest[-1] if rest and rest[-1] == "request" else rest[0] if rest else ""
    assert role in ("reply", "request"), f"{path.name}: say .reply or .request in the name"
    return method, role


def load(path: Path) -> dict[str, Any]:
    message = json.loads(path.read_text())
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", path
    return message


def ids(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_every_recorded_agent_has_the_core_messages() -> None:
    agents = sorted({p.parent.name for p in FILES})
    assert len(agents) >= 3, agents
    for agent in agents:
        names = {p.name for p in FILES if p.parent.name == agent}
        assert {"initialize.reply.json", "session-new.reply.json"} <= names, agent
        assert "session-update.agent_message_chunk.json" in names, agent
        assert any(n.startswith("session-prompt.reply.") for n in names), agent


@pytest.mark.parametrize("path", FILES, ids=ids)
def test_parses_with_the_bridge_types(path: Path) -> None:
    method, role = describe(path)
    message = load(path)
    if role == "reply":
        assert "id" in message and "method" not in message
        model = REPLIES[method][0]
        parsed = parse_reply(model, message["result"], method)
        if isinstance(parsed, initialize_schema.InitializeResult):
            assert parsed.protocol_version == protocol.PROTOCOL_VERSION
        if isinstance(parsed, protocol.PromptResult):
            stop = path.name.split(".")[2]
            assert parsed.stop_reason == stop
            assert stop in protocol.KNOWN_STOP_REASONS
    elif role == "request":
        assert message["method"] == method and "id" in message
        REQUESTS[method][0].model_validate(message["params"])
    else:
        assert message["method"] == method and "id" not in message
        update = message["params"]["update"]
        collector = TurnCollector(EventSink(None))
        collector.session_known(message["params"]["sessionId"])
        collector.begin_turn()
        collector(message["params"])
        kind = update["sessionUpdate"]
        assert collector.malformed == 0, f"{kind} counted as malformed"
        assert not collector.unknown_kinds, f"{kind} is unknown to the collector"
        if kind == "agent_message_chunk":
            text = update["content"]["text"]
            assert collector.answer() == (text if text.strip() else "")
        if kind == "tool_call":
            assert update["toolCallId"] in collector.tools.calls


@pytest.mark.parametrize("path", FILES, ids=ids)
def test_validates_against_the_official_schema(path: Path) -> None:
    from acp import schema

    method, role = describe(path)
    message = load(path)
    if role == "reply":
        getattr(schema, REPLIES[method][1]).model_validate(message["result"])
    elif role == "request":
        getattr(schema, REQUESTS[method][1]).model_validate(message["params"])
    else:
        schema.SessionNotification.model_validate(message["params"])


def test_wire_names_are_pydantic_camel_case() -> None:
    """The wire types' own alias generator gives pydantic's ``to_camel`` for every field."""
    from pydantic.alias_generators import to_camel

    from acp_bridge._acp.wire.schema import Wire, camel

    seen, todo = 0, list(Wire.__subclasses__())
    while todo:
        model = todo.pop()
        todo += model.__subclasses__()
        for name in model.model_fields:
            assert camel(name) == to_camel(name), (model.__name__, name)
            seen += 1
    assert seen > 100
