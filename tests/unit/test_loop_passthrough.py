"""The passthrough model: directives, echo, and passing tool results through."""

from __future__ import annotations

import json

import pytest

from acp_bridge import envelope
from acp_bridge._entries.bash import CommandResult
from acp_bridge._loop.passthrough import (
    Directive,
    call_tool_directive,
    parse_prompt,
    unwrap_tool_result,
)
from acp_bridge.errors import ModelError


def test_directives_are_lines_in_order() -> None:
    prompt = "\n".join(
        [
            "Please do this.",
            call_tool_directive("bash", {"command": "echo 'a\\nb'"}),
            '  ***CALL_TOOL read_file {"path": "x"}',
            "***CALL_TOOL noargs",
            "***FIXED_RESPONSE all done",
        ]
    )
    directives, fixed = parse_prompt(prompt)
    assert directives == [
        Directive("bash", {"command": "echo 'a\\nb'"}),
        Directive("read_file", {"path": "x"}),
        Directive("noargs", {}),
    ]
    assert fixed == "all done"
    assert parse_prompt("just words ***CALL_TOOL mid-line") == ([], None)


def test_nested_directives_survive_json_quoting() -> None:
    inner = call_tool_directive("bash", {"command": "printf 'x\\ny\\n'"})
    (outer,), _ = parse_prompt(call_tool_directive("spawn", {"task": inner, "tools": ["bash"]}))
    (again,), _ = parse_prompt(outer.args["task"])
    assert again == Directive("bash", {"command": "printf 'x\\ny\\n'"})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("***CALL_TOOL", "needs a tool name"),
        ("***CALL_TOOL bash {not json}", "not valid JSON"),
        ("***CALL_TOOL bash [1]", "must be an object"),
    ],
)
def test_bad_directives_are_model_errors(line: str, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        parse_prompt(line)


def test_tool_results_are_unwrapped() -> None:
    bash_env = CommandResult(exit_code=0, stdout="three\n").envelope()
    assert unwrap_tool_result(bash_env.to_json()) == "three"
    json_env = envelope.done({"ok": True, "value": 42}, output_kind="json", output_schema="x")
    assert unwrap_tool_result(json_env.to_json()) == '{"ok":true,"value":42}'
    assert unwrap_tool_result(envelope.done(" beta \n").to_json()) == "beta"
    plain = {"exit_code": 0, "stdout": "SUBAGENT_BASH_OK\n", "stderr": ""}
    assert unwrap_tool_result(json.dumps(plain)) == "SUBAGENT_BASH_OK"
    assert unwrap_tool_result("  some text \n") == "some text"
    assert unwrap_tool_result("[1, 2]") == "[1,2]"
    failed = envelope.failed("boom", envelope.ErrorCode.TIMEOUT, output="")
    assert unwrap_tool_result(failed.to_json()) == "failed: boom"
    assert unwrap_tool_result(json.dumps({"exit_code": 0, "stdout": ""})) == "(no output)"
