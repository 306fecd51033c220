"""Bounds counted in what a message decodes to, through the real agent process (issue 19,
class 2): every collection the wire can grow is bounded at the parse boundary, whichever
message carries it. A line of more than MAX_VALUES values is refused before it is decoded
(a reply so refused still ends its wait); a list or object longer than MAX_ITEMS is cut in
a notification or reply (a warning) and refused -32602 in a request. Memory itself is
measured by ``benchmarks/floods.py``, not here."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_bridge._acp.wire.inbound import MAX_ITEMS, MAX_VALUES
from tests.spy import Spy

MANY = MAX_VALUES + 10
LONG = MAX_ITEMS + 10


def items(n: int, item: str = "{}") -> str:
    return ",".join([item] * n)


def update(body: str) -> dict[str, Any]:
    line = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%SESSION%",'
        '"update":' + body + "}}"
    )
    return {"raw": line}


def request(method: str, params: str) -> dict[str, Any]:
    line = (
        '{"jsonrpc":"2.0","id":%ID%,"method":"' + method + '",'
        '"params":{"sessionId":"%SESSION%",' + params + "}}"
    )
    return {"raw_request": line}


PLAN_ENTRY = '{"content":"step","priority":"low","status":"pending"}'
TOOL = '"toolCallId":"t1","title":"Read","kind":"read"'
OPTION = '{"optionId":"a","name":"Allow","kind":"allow_once"}'

# A notification or a reply that is cut or refused: the turn still ends with its answer.
NOTIFICATIONS = {
    "plan of MAX_VALUES+ entries": update(
        '{"sessionUpdate":"plan","entries":[' + items(MANY) + "]}"
    ),
    "plan of MAX_ITEMS+ entries": update(
        '{"sessionUpdate":"plan","entries":[' + items(LONG, PLAN_ENTRY) + "]}"
    ),
    "tool call of MAX_VALUES+ locations": update(
        '{"sessionUpdate":"tool_call",' + TOOL + ',"locations":[' + items(MANY) + "]}"
    ),
    "tool call of MAX_ITEMS+ content blocks": update(
        '{"sessionUpdate":"tool_call",' + TOOL + ',"content":['
        + items(LONG, '{"type":"content","content":{"type":"text","text":"x"}}') + "]}"
    ),
    "commands, MAX_ITEMS+": update(
        '{"sessionUpdate":"available_commands_update","availableCommands":['
        + items(LONG, '{"name":"c","description":"d"}') + "]}"
    ),
    "an object of MAX_ITEMS+ keys": update(
        '{"sessionUpdate":"session_info_update","_meta":{'
        + ",".join(f'"k{i}":1' for i in range(LONG)) + "}}"
    ),
    "nested arrays, MAX_VALUES+": update(
        '{"sessionUpdate":"x_custom","v":[' + items(MANY, "[]") + "]}"
    ),
    "numbers, MAX_VALUES+": update('{"sessionUpdate":"x_custom","v":[' + items(MANY, "1.5") + "]}"),
    "short strings, MAX_VALUES+": update(
        '{"sessionUpdate":"x_custom","v":[' + items(MANY, '"ab"') + "]}"
    ),
    "a notification of MAX_VALUES+ values": {
        "raw": '{"jsonrpc":"2.0","method":"x/custom","params":{"v":[' + items(MANY) + "]}}"
    },
}  # fmt: skip


@pytest.mark.parametrize("shape", list(NOTIFICATIONS))
def test_a_collection_too_long_in_a_notification_is_cut_or_skipped(spy: Spy, shape: str) -> None:
    script = {"prompt": [NOTIFICATIONS[shape]], "answer": "ANSWER"}
    result = spy.harness.run("spy", "go", spy.config(script, timeouts={"run": 30}))
    assert (result.status, result.output) == ("done", "ANSWER"), result.error
    warnings = " ".join(result.meta.warnings or [])
    assert f"first {MAX_ITEMS} items" in warnings or f"at most {MAX_VALUES}" in warnings, warnings
    assert len(result.meta.plan or []) <= MAX_ITEMS
    for call in result.meta.tool_calls or []:
        assert len(call.locations or []) <= MAX_ITEMS


REQUESTS = {
    "permission with MAX_ITEMS+ options": request(
        "session/request_permission",
        '"toolCall":{' + TOOL + '},"options":[' + items(LONG, OPTION) + "]",
    ),
    "permission with MAX_ITEMS+ locations": request(
        "session/request_permission",
        '"toolCall":{' + TOOL + ',"locations":[' + items(LONG, '{"path":"/tmp/x"}')
        + ']},"options":[' + OPTION + "]",
    ),
    "terminal with MAX_ITEMS+ arguments": request(
        "terminal/create", '"command":"echo","args":[' + items(LONG, '"a"') + "]"
    ),
    "terminal with MAX_ITEMS+ variables": request(
        "terminal/create", '"command":"env","env":[' + items(LONG, '{"name":"A","value":"1"}') + "]"
    ),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(REQUESTS))
def test_a_request_with_a_collection_too_long_is_answered_32602(spy: Spy, shape: str) -> None:
    script = {"prompt": [REQUESTS[shape]]}
    result = spy.harness.run("spy", "go", spy.config(script, timeouts={"run": 30}))
    assert result.status == "done", result.error
    (reply,) = json.loads(result.output)
    assert reply["code"] == -32602 and f"more than {MAX_ITEMS} items" in reply["data"], reply


def test_a_request_of_too_many_values_is_refused_unread(spy: Spy) -> None:
    script = {
        "prompt": [
            {
                "raw": '{"jsonrpc":"2.0","id":"big","method":"fs/read_text_file","params":'
                '{"sessionId":"%SESSION%","path":"/tmp/x","v":[' + items(MANY) + "]}}"
            }
        ],
        "answer": "ANSWER",
    }
    result = spy.harness.run("spy", "go", spy.config(script, timeouts={"run": 30}))
    assert (result.status, result.output) == ("done", "ANSWER"), result.error
    replies = [m for m in spy.received() if "error" in m and m.get("id") is None]
    assert replies and replies[0]["error"]["code"] == -32600


def test_a_prompt_reply_of_too_many_values_ends_the_turn_at_once(spy: Spy) -> None:
    reply = (
        '{"jsonrpc":"2.0","id":%ID%,"result":{"stopReason":"end_turn","_meta":{"v":['
        + items(MANY)
        + "]}}}"
    )
    script = {"answer": "ANSWER", "raw_reply": reply}
    result = spy.harness.run("spy", "go", spy.config(script, timeouts={"run": 60}))
    # Not a timeout at 60 s: the reply was read, refused and still ended the turn.
    assert result.meta.error_code != "timeout" and (result.meta.duration_ms or 0) < 30_000
    assert f"at most {MAX_VALUES}" in result.error, result.error
