"""Numbers and shapes at the parse boundary, through the real agent process (issue 19, class
5): NaN, Infinity, 10^400 and friends in usage, a field of the wrong type, a NUL where the OS
would get it. Each is a clean -32602 to the agent or a clean warning in the envelope; never a
dropped reply that turns a finished turn into a timeout, never ``internal_error``, never a
figure the run store cannot hold."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_bridge._os.limits import MAX_TOKENS
from tests.spy import Spy

BIG_INT = "1" + "0" * 400
HUGE_INT = "1" + "0" * 5000  # past Python's 4300-digit limit for int()


def prompt_reply(usage: str) -> dict[str, Any]:
    reply = '{"jsonrpc":"2.0","id":%ID%,"result":{"stopReason":"end_turn","usage":' + usage + "}}"
    return {"answer": "ANSWER", "raw_reply": reply}


def raw_update(update: str) -> dict[str, Any]:
    line = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%SESSION%",'
        '"update":' + update + "}}"
    )
    return {"prompt": [{"raw": line}], "answer": "ANSWER"}


def raw_request(method: str, params: str) -> dict[str, Any]:
    line = (
        '{"jsonrpc":"2.0","id":%ID%,"method":"' + method + '",'
        '"params":{"sessionId":"%SESSION%",' + params + "}}"
    )
    return {"prompt": [{"raw_request": line}]}


# (script, what is kept in meta.usage or None, a warning's words or None)
USAGE_SHAPES = {
    "NaN": (prompt_reply('{"inputTokens":NaN,"outputTokens":5}'), {"output_tokens": 5}, "null"),
    "Infinity": (prompt_reply('{"inputTokens":Infinity}'), None, "null"),
    "-Infinity": (
        prompt_reply('{"outputTokens":-Infinity,"inputTokens":3}'),
        {"input_tokens": 3},
        "null",
    ),
    "1e400": (prompt_reply('{"totalTokens":1e400}'), None, "null"),
    "10^400": (prompt_reply('{"totalTokens":' + BIG_INT + "}"), None, "null"),
    "10^5000": (prompt_reply('{"totalTokens":' + HUGE_INT + "}"), None, "null"),
    "2^63": (prompt_reply('{"totalTokens":9223372036854775808}'), None, "null"),
    "1e300": (prompt_reply('{"totalTokens":1e300}'), None, "not token counts"),
    "2^62": (prompt_reply('{"inputTokens":4611686018427387904}'), None, "not token counts"),
    "negative": (prompt_reply('{"inputTokens":-5}'), None, "not token counts"),
    "string": (prompt_reply('{"inputTokens":"12"}'), None, "not token counts"),
    "list": (prompt_reply('{"inputTokens":[1]}'), None, "not token counts"),
    "usage a number": (prompt_reply("5"), None, "not token counts"),
    "used 10^30": (
        raw_update('{"sessionUpdate":"usage_update","used":1' + "0" * 30 + "}"),
        None,
        "null",
    ),
    "used 1e300": (
        raw_update('{"sessionUpdate":"usage_update","used":1e300,"size":5}'),
        None,
        "malformed",
    ),
    "cost NaN": (
        raw_update('{"sessionUpdate":"usage_update","cost":{"amount":NaN,"currency":"USD"}}'),
        None,
        "null",
    ),
    "plan a number": (raw_update('{"sessionUpdate":"plan","entries":5}'), None, "malformed"),
    "plan entry a string": (
        raw_update('{"sessionUpdate":"plan","entries":["x"]}'),
        None,
        "malformed",
    ),
}


@pytest.mark.parametrize("shape", list(USAGE_SHAPES))
def test_a_bad_number_or_shape_is_a_warning_and_the_turn_still_ends(spy: Spy, shape: str) -> None:
    script, kept, warning = USAGE_SHAPES[shape]
    config = spy.config(script, timeouts={"run": 20})
    result = spy.harness.run("spy", "go", config)
    assert (result.status, result.meta.error_code) == ("done", None), result.error
    assert result.output == "ANSWER"
    usage = result.meta.usage or {}
    assert all(type(v) in (int, float) and 0 <= v <= MAX_TOKENS for v in usage.values()), usage
    if kept is not None:
        assert usage == kept
    warnings = " ".join(result.meta.warnings or [])
    if warning is not None:
        assert warning in warnings, warnings
    json.dumps(result.model_dump(mode="json"), allow_nan=False)  # the envelope stays JSON


PERMISSION = '"toolCall":{"toolCallId":"t1","kind":"edit","title":"Edit"},'
REQUEST_SHAPES = {
    "options a number": ("session/request_permission", PERMISSION + '"options":5'),
    "options a string": ("session/request_permission", PERMISSION + '"options":"allow"'),
    "options of numbers": ("session/request_permission", PERMISSION + '"options":[5]'),
    "option kind NaN": (
        "session/request_permission",
        PERMISSION + '"options":[{"optionId":"a","kind":NaN}]',
    ),
    "toolCall a list": ("session/request_permission", '"toolCall":[],"options":[]'),
    "command with NUL": ("terminal/create", '"command":"ls\\u0000rm"'),
    "argument with NUL": ("terminal/create", '"command":"ls","args":["-l\\u0000"]'),
    "env name with NUL": (
        "terminal/create",
        '"command":"ls","env":[{"name":"A\\u0000","value":"1"}]',
    ),
    "cwd with NUL": ("terminal/create", '"command":"ls","cwd":"/tmp\\u0000"'),
    "outputByteLimit 1e400": ("terminal/create", '"command":"ls","outputByteLimit":1e400'),
    "outputByteLimit NaN": ("terminal/create", '"command":"ls","outputByteLimit":NaN'),
    "read path with NUL": ("fs/read_text_file", '"path":"/tmp/x\\u0000y"'),
    "read line 10^400": ("fs/read_text_file", '"path":"/tmp/x","line":' + BIG_INT),
    "read limit -1": ("fs/read_text_file", '"path":"/tmp/x","limit":-1'),
    "write path with NUL": ("fs/write_text_file", '"path":"/tmp/x\\u0000y","content":"x"'),
    "write content a number": ("fs/write_text_file", '"path":"/tmp/x","content":5'),
    "wait id a number": ("terminal/wait_for_exit", '"terminalId":5'),
}


@pytest.mark.parametrize("shape", list(REQUEST_SHAPES))
def test_a_request_of_the_wrong_shape_is_answered_32602(spy: Spy, shape: str) -> None:
    method, params = REQUEST_SHAPES[shape]
    config = spy.config(raw_request(method, params), timeouts={"run": 20})
    result = spy.harness.run("spy", "go", config)
    assert (result.status, result.meta.error_code) == ("done", None), result.error
    (reply,) = json.loads(result.output)
    assert reply["code"] == -32602, reply
