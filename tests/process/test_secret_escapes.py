"""Secrets in every escaping, through the real agent process (issue 19, class 9): the agent
writes a secret of its profile spelled in some JSON escaping; neither the transcript nor the
events (stderr, the run store) may hold it once decoded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_bridge.events import Event
from tests.spy import Spy

SECRET = "sk-Live/é€Ω-42"  # non-BMP pairs: the unit test (a YAML config cannot hold them)


def spelled(how: str) -> str:
    def uhex(c: str, upper: bool) -> str:
        code = ord(c)
        if code > 0xFFFF:
            hi, lo = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
            return uhex(chr(hi), upper) + uhex(chr(lo), upper)
        text = f"\\u{code:04x}"
        return text.upper().replace("\\U", "\\u") if upper else text

    if how == "plain":
        return SECRET
    if how == "ascii":
        return json.dumps(SECRET)[1:-1]
    if how == "every char lower hex":
        return "".join(uhex(c, False) for c in SECRET)
    if how == "every char upper hex":
        return "".join(uhex(c, True) for c in SECRET)
    if how == "slash escaped":
        return SECRET.replace("/", "\\/")
    if how == "one letter":
        return SECRET.replace("L", "\\u004c")
    if how == "ampersand-style dash":
        return SECRET.replace("-", "\\u002d")
    if how == "mixed case hex":
        return SECRET.replace("€", "\\u20Ac")
    if how == "non-ASCII literal, ASCII escaped":
        return "".join(c if ord(c) > 127 else uhex(c, False) for c in SECRET)
    if how == "alternating":
        return "".join(uhex(c, i % 2 == 0) if i % 3 else c for i, c in enumerate(SECRET))
    raise AssertionError(how)


HOWS = [
    "plain",
    "ascii",
    "every char lower hex",
    "every char upper hex",
    "slash escaped",
    "one letter",
    "ampersand-style dash",
    "mixed case hex",
    "non-ASCII literal, ASCII escaped",
    "alternating",
]


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


@pytest.mark.parametrize("how", HOWS)
def test_a_secret_is_hidden_in_transcript_and_events_however_escaped(spy: Spy, how: str) -> None:
    text = f"my key is {spelled(how)} ok"
    assert json.loads(f'"{text}"') == f"my key is {SECRET} ok"
    chunk = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%SESSION%",'
        '"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"'
        + text
        + '"}}}}'
    )
    title = (
        '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%SESSION%",'
        '"update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"use '
        + spelled(how)
        + '","kind":"read"}}}'
    )
    script = {"prompt": [{"raw": title}, {"raw": chunk}], "answer": "ANSWER"}
    config = spy.config(script, env={"API_KEY": SECRET})
    events: list[Event] = []
    result = spy.harness.run("spy", "go", config, on_event=events.append)
    assert result.status == "done", result.error
    transcript = Path(result.meta.transcript or "")
    decoded = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert decoded and not any(SECRET in s for line in decoded for s in strings(line))
    assert any("[REDACTED]" in s for line in decoded for s in strings(line))
    shown = [e.to_dict() for e in events]
    assert not any(SECRET in s for e in shown for s in strings(e))
    assert any("[REDACTED]" in s for e in shown if e["kind"] == "message" for s in strings(e))
