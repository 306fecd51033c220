"""The MCP face's pure parts: arguments, the allowlist, listen addresses and tokens, how a
permission question is put to the host and its answer read, progress lines, the envelope as a
tool result. The server itself is tested as a process in tests/mcp/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from acp_bridge._acp.services.permissions import PermissionQuestion
from acp_bridge._acp.wire.schema import PermissionOption
from acp_bridge._mcp.arguments import AcpSpawnArgs, BashArgs, StartArgs, parse
from acp_bridge._mcp.progress import describe
from acp_bridge._mcp.questions import permission_answer, permission_form
from acp_bridge._mcp.relay import TEXT_LIMIT, envelope_result
from acp_bridge._mcp.tool_catalog import select
from acp_bridge._mcp.transport.listen import Listen, check_listen, parse_listen, read_token
from acp_bridge.cli import main
from acp_bridge.envelope import done, failed
from acp_bridge.errors import ConfigError, ErrorCode
from acp_bridge.events import Event


def problems(error: ConfigError) -> list[tuple[str, str]]:
    return [(p.field, p.message) for p in error.problems]


def test_entry_arguments_become_the_one_request_shape() -> None:
    request = parse(AcpSpawnArgs, {"agent": "demo", "task": "hi", "timeout": 5}).request()
    assert (request.entry, request.agent, request.task, request.option("timeout")) == (
        "acp_spawn", "demo", "hi", 5,
    )  # fmt: skip
    bash = parse(BashArgs, {"command": "ls", "max_output_bytes": 100}).request()
    assert (bash.entry, bash.task, bash.option("max_output_bytes")) == ("bash", "ls", 100)


def test_every_bad_argument_is_named() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(AcpSpawnArgs, {"task": 3, "timeout": -1, "extra": True})
    assert problems(caught.value) == [
        ("timeout", "Input should be greater than 0"),
        ("agent", "Field required"),
        ("task", "Input should be a valid string"),
        ("extra", "unknown argument"),
    ]


def test_start_checks_what_its_entry_needs() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(StartArgs, {"entry": "spawn", "task": "t"}).request()
    assert problems(caught.value) == [("", "spawn needs tools")]
    with pytest.raises(ConfigError) as caught:
        parse(StartArgs, {"entry": "bash", "task": "ls", "mode": "plan"}).request()
    assert problems(caught.value) == [("", "mode: only for acp_spawn")]


def test_the_allowlist_knows_every_tool() -> None:
    assert select(None)[0] == "acp_spawn"
    assert select(["wait", "start", "wait"]) == ("wait", "start")
    with pytest.raises(ConfigError, match="unknown tool 'shell'; known: acp_spawn"):
        select(["acp_spawn", "shell"])
    with pytest.raises(ConfigError, match="at least one"):
        select([])


@pytest.mark.parametrize(
    ("text", "host", "port", "loopback"),
    [
        ("127.0.0.1:8765", "127.0.0.1", 8765, True),
        ("[::1]:0", "::1", 0, True),
        ("localhost:80", "localhost", 80, True),
        ("0.0.0.0:8765", "0.0.0.0", 8765, False),
        ("bridge.example:443", "bridge.example", 443, False),
    ],
)
def test_listen_addresses(text: str, host: str, port: int, loopback: bool) -> None:
    listen = parse_listen(text)
    assert (listen.host, listen.port, listen.loopback) == (host, port, loopback)


@pytest.mark.parametrize("text", ["localhost", ":80", "127.0.0.1:http", "127.0.0.1:70000"])
def test_bad_listen_addresses(text: str) -> None:
    with pytest.raises(ConfigError, match="expected HOST:PORT"):
        parse_listen(text)


def test_beyond_loopback_only_with_a_token() -> None:
    check_listen(Listen("127.0.0.1", 0), None)
    check_listen(Listen("0.0.0.0", 0), "secret")
    with pytest.raises(ConfigError, match="refusing to listen beyond loopback"):
        check_listen(Listen("0.0.0.0", 0), None)
    assert Listen("::1", 0).url(8080) == "http://[::1]:8080/mcp"


def test_the_token_comes_from_a_file_or_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("  from-file\n")
    assert read_token(file, {"ACP_BRIDGE_MCP_TOKEN": "from-env"}) == "from-file"
    assert read_token(None, {"ACP_BRIDGE_MCP_TOKEN": "from-env"}) == "from-env"
    assert read_token(None, {}) is None
    file.write_text("\n")
    with pytest.raises(ConfigError, match="is empty"):
        read_token(file, {})
    with pytest.raises(ConfigError, match="cannot read"):
        read_token(tmp_path / "missing", {})


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--token-file", "token"], "--token-file goes with --http"),
        (["--http", "localhost"], "--http: expected HOST:PORT"),
        (["--ask-timeout", "0"], "--ask-timeout must be a positive number"),
        (["--tools", "acp_spawn,shell"], "--tools: unknown tool 'shell'"),
    ],
)
def test_the_command_refuses_what_cannot_serve(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", *args]) == 2  # before anything is served: nothing to stop
    captured = capsys.readouterr()
    assert says in captured.err and captured.out == ""


OPTIONS = (
    PermissionOption(option_id="yes", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
)


def question(options: tuple[PermissionOption, ...] = OPTIONS) -> PermissionQuestion:
    return PermissionQuestion(
        "call_1", "run make", "execute", ("/w/Makefile",), options, {"command": "make"}
    )


def test_a_permission_question_as_a_form() -> None:
    form = permission_form(question(), "codex")
    assert form.message.splitlines() == [
        "codex asks permission: run make [execute]",
        "at: /w/Makefile",
        'input: {"command": "make"}',
    ]
    field = form.requested_schema["properties"]["decision"]
    assert (field["enum"], field["enumNames"], field["default"]) == (
        ["yes", "no"], ["Allow once", "Reject"], "no",
    )  # fmt: skip
    plain = permission_form(question(()), "codex").requested_schema["properties"]["decision"]
    assert (plain["enum"], plain["default"]) == (["allow", "reject"], "reject")


@pytest.mark.parametrize(
    ("answer", "options", "hook_says"),
    [
        (types.ElicitResult(action="accept", content={"decision": "yes"}), OPTIONS, "yes"),
        (types.ElicitResult(action="accept", content={"decision": "no"}), OPTIONS, "no"),
        (types.ElicitResult(action="accept", content={"decision": "maybe"}), OPTIONS, False),
        (types.ElicitResult(action="decline"), OPTIONS, False),
        (types.ElicitResult(action="cancel"), OPTIONS, False),
        (None, OPTIONS, False),
        (types.ElicitResult(action="accept", content={"decision": "allow"}), (), True),
        (types.ElicitResult(action="accept", content={"decision": "reject"}), (), False),
    ],
)
def test_anything_but_a_clear_answer_is_a_rejection(
    answer: types.ElicitResult | None, options: tuple[PermissionOption, ...], hook_says: Any
) -> None:
    assert permission_answer(question(options), answer) == hook_says


@pytest.mark.parametrize(
    ("kind", "data", "line"),
    [
        ("status", {"phase": "session", "session_id": "s1", "x": None}, "session session_id=s1"),
        (
            "tool_call",
            {"tool_call_id": "c1", "title": "sleep 3", "tool_kind": "think"},
            "tool: sleep 3 [think]",
        ),
        ("terminal", {"command": "make", "exit_code": 2}, "$ make: exit 2"),
        ("message", {"text": "one\ntwo  "}, "agent: one two"),
        ("usage", {"used": 10}, None),
    ],
)
def test_events_as_progress_lines(kind: Any, data: dict[str, Any], line: str | None) -> None:
    assert describe(Event(kind, "sub_1", 0.0, data)) == line


def test_the_envelope_as_a_tool_result() -> None:
    ok = envelope_result(done("first line\nsecond", task_id="sub_1"))
    assert not ok.is_error and ok.structured_content["output"] == "first line\nsecond"
    text = ok.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text == "first line\n\nfirst line\nsecond\n\ntask_id: sub_1"
    bad = envelope_result(failed("boom", ErrorCode.AGENT_EXITED, output="x" * (TEXT_LIMIT + 5)))
    assert bad.is_error and bad.structured_content["meta"]["error_code"] == "agent_exited"
    assert "(5 more characters in the structured output)" in bad.content[0].text  # type: ignore[union-attr]
