"""The one parse boundary (inbound.py), the collector behind it, the outbox and the request
pool: whatever the agent sends, nothing raises past them, and everything is bounded.
Property-based: hypothesis feeds them arbitrary JSON."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_bridge._acp.rpc.connection import JsonRpcConnection
from acp_bridge._acp.rpc.request_pool import RequestPool
from acp_bridge._acp.rpc.router import Route, Router
from acp_bridge._acp.turn.turn_collector import TurnCollector
from acp_bridge._acp.wire import inbound
from acp_bridge._acp.wire.inbound import MAX_DEPTH, MAX_ITEMS, MAX_VALUES, InboundStats, decode_line
from acp_bridge._acp.wire.jsonrpc_messages import (
    NotificationMessage,
    ReplyMessage,
    RequestMessage,
    Skipped,
    classify,
)
from acp_bridge._acp.wire.outbox import Outbox
from acp_bridge._acp.wire.schema import ReadTextFileParams
from acp_bridge._acp.wire.transcript import Transcript
from acp_bridge.envelope import Meta
from acp_bridge.errors import BridgeError, RunTimeout
from acp_bridge.events import EventSink
from tests.helpers import ChunkStream, NullSink

# --- classify: one table of what is what -----------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"id": True, "result": {}}, Skipped),  # bool is an int in Python, not an id
        ({"id": 1.0, "result": {}}, Skipped),
        ({"id": "1", "result": {}}, Skipped),  # ours are integers
        ({"id": 7, "result": {}}, ReplyMessage),
        ({"id": 7, "error": "text"}, ReplyMessage),
        ({"id": [1], "method": "x"}, Skipped),
        ({"id": {"a": 1}, "method": "x"}, Skipped),
        ({"id": None, "method": "x"}, Skipped),
        ({"id": "a", "method": "x", "params": {}}, RequestMessage),
        ({"id": 3, "method": "x", "params": [1]}, RequestMessage),  # answered -32602
        ({"method": ["session/update"]}, Skipped),
        ({"method": "session/update", "params": "x"}, Skipped),
        ({"method": "session/update"}, NotificationMessage),
        ({"jsonrpc": "2.0"}, Skipped),
    ],
)
def test_classify(message: dict[str, Any], expected: type) -> None:
    assert type(classify(message)) is expected


def test_replies_carry_a_checked_error() -> None:
    reply = classify({"id": 2, "error": {"code": "x", "message": ["no"], "data": 1}})
    assert isinstance(reply, ReplyMessage) and reply.error is not None
    assert type(reply.error["code"]) is int and isinstance(reply.error["message"], str)
    long = classify({"id": 2, "error": {"code": 1, "message": "m" * 100_000}})
    assert isinstance(long, ReplyMessage) and long.error is not None
    assert len(long.error["message"]) < 3000


@pytest.mark.parametrize(
    "line",
    [
        b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"t":"\xff"}',
        b'{"a":1} trailing',
    ],
    ids=["100000 deep", "not UTF-8", "trailing"],
)
def test_lines_that_are_not_usable_json_are_counted_not_raised(line: bytes) -> None:
    stats = InboundStats()
    assert decode_line(line, stats) is None
    assert stats.non_json == 1


NUMBER_TEXT = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" + "0" * 5000]),
    st.integers().map(str),
    st.integers(min_value=-(10**500), max_value=10**500).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(st.integers(0, 10**6), st.integers(-999, 999)).map(lambda t: f"{t[0]}e{t[1]}"),
)


@given(NUMBER_TEXT)
def test_every_number_is_held_or_read_as_null_and_counted(text: str) -> None:
    """A reply whose result holds any number text still is that reply: the number is an
    int within 64 bits, a finite float, or null (counted for a warning)."""
    stats = InboundStats()
    line = b'{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn","n":%s}}' % text.encode()
    reply = decode_line(line, stats)
    assert isinstance(reply, ReplyMessage) and reply.id == 7
    value = reply.result["n"]
    if value is None:
        assert stats.numbers == 1
    else:
        assert stats.numbers == 0
        if type(value) is int:
            assert -(2**63) <= value < 2**63
        else:
            assert type(value) is float and math.isfinite(value)
    assert stats.non_json == 0


@pytest.mark.parametrize("text", ["NaN", "1e400", "1" + "0" * 30])
def test_a_request_holding_an_unheld_number_is_not_served(text: str) -> None:
    stats = InboundStats()
    line = b'{"jsonrpc":"2.0","id":"r","method":"fs/read_text_file","params":{"line":%s}}'
    request = decode_line(line % text.encode(), stats)
    assert isinstance(request, RequestMessage) and not request.params_ok
    assert "64 bits" in request.params_problem and stats.numbers == 1


def test_nesting_past_the_limit_is_skipped_and_lone_surrogates_repaired() -> None:
    stats = InboundStats()
    deep = b'{"method":"x","params":{"a":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}}"
    assert isinstance(decode_line(deep, stats), Skipped)
    fixed = decode_line(b'{"method":"x","params":{"t":"a\\ud800b","\\udfff":1}}', stats)
    assert isinstance(fixed, NotificationMessage) and fixed.params is not None
    assert fixed.params == {"t": "a\ufffdb", "\ufffd": 1} and stats.repaired == 1
    emoji = decode_line(b'{"method":"x","params":{"t":"\\ud83d\\ude00"}}', stats)
    assert isinstance(emoji, NotificationMessage) and emoji.params == {"t": "\U0001f600"}
    assert stats.repaired == 1  # a valid pair is not a repair


def test_an_update_comes_back_as_its_params_and_anything_else_as_a_message() -> None:
    stats = InboundStats()
    update = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}
    line = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": update})
    assert decode_line(line.encode(), stats) == update
    for other in (
        {"jsonrpc": "2.0", "method": "session/update"},  # no params
        {"jsonrpc": "2.0", "method": "session/update", "params": {}, "id": 3},  # a request
        {"jsonrpc": "2.0", "method": "session/other", "params": update},
    ):
        assert not isinstance(decode_line(json.dumps(other).encode(), stats), dict)


@pytest.mark.parametrize("pad", [0, 1 << 16], ids=["short line", "long line"])
def test_the_bounds_hold_on_short_and_long_lines(pad: int) -> None:
    """Short lines have their commas and brackets bounded in one pass, long ones counted:
    either way too deep is skipped, too long is cut, too many values is refused."""
    filler = b',"pad":"' + b"x" * pad + b'"'

    def line(params: bytes) -> bytes:
        return b'{"jsonrpc":"2.0","method":"x","params":{"a":%b%b}}' % (params, filler)

    stats = InboundStats()
    arrays = MAX_DEPTH - 2  # under the message's object and its params
    deep = decode_line(line(b"[" * (arrays + 1) + b"]" * (arrays + 1)), stats)
    assert isinstance(deep, Skipped) and "nested deeper" in deep.reason
    shallow = decode_line(line(b"[" * arrays + b"]" * arrays), stats)
    assert isinstance(shallow, NotificationMessage)
    cut = decode_line(line(b"[" + b",".join([b"1"] * (MAX_ITEMS + 5)) + b"]"), stats)
    assert isinstance(cut, NotificationMessage) and cut.params is not None
    assert len(cut.params["a"]) == MAX_ITEMS and stats.cut_collections == 1
    kept = decode_line(line(b"[" + b",".join([b"1"] * MAX_ITEMS) + b"]"), stats)
    assert isinstance(kept, NotificationMessage) and kept.params is not None
    assert len(kept.params["a"]) == MAX_ITEMS and stats.cut_collections == 1
    many = decode_line(line(b"[" + b",".join([b"1"] * (MAX_VALUES + 5)) + b"]"), stats)
    assert isinstance(many, Skipped) and "values" in many.reason


# --- fuzzing the line handler and the collector --------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
TEXT = st.text(min_size=1, max_size=10)
# Each field is either of the shape ACP says or anything at all: the collector must take
# both (a valid chunk with a list as its messageId, a tool call with an object as its title).
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "content": st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}) | JSON,
    "messageId": TEXT | JSON,
    "toolCallId": TEXT | JSON,
    "title": TEXT | JSON,
    "kind": st.sampled_from(["execute", "edit", "read"]) | JSON,
    "status": TEXT | JSON,
    "locations": st.lists(st.fixed_dictionaries({"path": TEXT}) | JSON, max_size=3) | JSON,
    "rawInput": st.fixed_dictionaries({"command": TEXT}) | JSON,
    "entries": st.lists(st.fixed_dictionaries({"content": TEXT}) | JSON, max_size=3) | JSON,
    "used": st.integers() | JSON,
    "cost": st.fixed_dictionaries({"amount": st.floats(), "currency": TEXT}) | JSON,
    "currentModeId": TEXT | JSON,
}
KINDS = st.sampled_from(
    ["agent_message_chunk", "tool_call", "tool_call_update", "plan", "usage_update",
     "agent_thought_chunk", "current_mode_update", "unknown_kind"]
)  # fmt: skip
UPDATE = st.builds(
    lambda kind, fields: {"sessionUpdate": kind, **fields},
    KINDS | JSON,
    st.fixed_dictionaries({}, optional=FIELDS),
) | st.fixed_dictionaries(  # a valid chunk but for one field: where the hot path must hold
    {
        "sessionUpdate": st.just("agent_message_chunk"),
        "content": st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
        "messageId": JSON,
    }
)
MESSAGE = st.one_of(
    JSON,
    st.dictionaries(
        st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]), JSON
    ),
    UPDATE.map(
        lambda u: {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": u},
        }
    ),
    JSON.map(lambda p: {"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file", "params": p}),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGE, max_size=12), st.binary(max_size=40))
def test_the_line_handler_survives_any_json(messages: list[Any], noise: bytes) -> None:
    data = b"\n".join([json.dumps(m).encode() for m in messages] + [noise]) + b"\n"
    collector = TurnCollector(EventSink(lambda _: None, "default"))
    collector.session_known("s")
    collector.begin_turn()

    async def read(params: ReadTextFileParams) -> dict[str, Any]:
        return {"content": params.path}

    async def main() -> JsonRpcConnection:
        conn = JsonRpcConnection(
            ChunkStream([data[: len(data) // 2], data[len(data) // 2 :]]),
            NullSink(),
            on_update=collector,
            router=Router([Route("fs/read_text_file", ReadTextFileParams, read)]),
        )
        with anyio.fail_after(10):
            async with conn:
                await conn.wait_closed()
        return conn

    conn = anyio.run(main)
    assert conn.failure is None or isinstance(conn.failure, BridgeError)
    assert conn.stats.lines == data.count(b"\n")
    assert not conn.stats.skipped.get("a NotificationMessage the bridge could not use")
    assert isinstance(collector.answer(), str)
    meta = Meta(tool_calls=collector.tool_call_records(), usage=collector.usage or None)
    json.dumps(meta.model_dump(mode="json"), allow_nan=False).encode()
    assert all(isinstance(w, str) for w in collector.warnings() + conn.stats.warnings())


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        UPDATE.map(lambda update: {"sessionId": "s", "update": update})
        | st.dictionaries(st.sampled_from(["update", "sessionId"]), JSON),
        max_size=30,
    )
)
def test_the_collector_survives_any_update(params: list[dict[str, Any]]) -> None:
    collector = TurnCollector(EventSink(lambda _: None, "default"))
    collector.session_known("s")
    collector.begin_turn()
    for item in params:
        collector(item)
    collector.add_prompt_usage({"inputTokens": math.inf, "outputTokens": True, "totalTokens": 3})
    assert collector.usage.get("total_tokens", 3) == 3 and "input_tokens" not in collector.usage
    json.dumps([r.model_dump() for r in collector.tool_call_records()], allow_nan=False)


# --- the outbox and the pool ---------------------------------------------------------------


class Blocked:
    """An agent's stdin that is never read again: every send waits forever."""

    async def send(self, item: bytes) -> None:
        await anyio.sleep_forever()

    async def aclose(self) -> None:
        return None


def test_a_write_that_misses_its_deadline_stalls_the_outbox(tmp_path: Path) -> None:
    transcript = Transcript(tmp_path / "t.jsonl")
    dropped: list[str] = []
    outbox = Outbox(Blocked(), transcript, on_drop=lambda m, _why: dropped.append(m.label))

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(outbox.run)
            outbox.set_deadline(anyio.current_time() + 0.2)
            await outbox.put(b'{"big":1}', "session/prompt (id 3)", request_id=3)
            assert not await outbox.put(b"{}", "session/cancel", written_within=2)
            with pytest.raises(RunTimeout, match="stopped reading its stdin"):
                await outbox.put(b"{}", "anything later")

    anyio.run(main)
    transcript.close()
    lines = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [line["dir"] for line in lines] == ["note", "note"]  # nothing logged as sent
    assert lines[0]["note"].startswith("not sent: session/prompt (id 3)")
    assert dropped == ["session/prompt (id 3)", "session/cancel"]


def test_the_request_pool_bounds_workers_and_backlog() -> None:
    running, peak = 0, 0
    release = anyio.Event()

    async def handle(_: int) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1

    async def main() -> list[bool]:
        async with anyio.create_task_group() as tg:
            pool = RequestPool(tg, handle, workers=2, backlog=3)
            offered = [pool.offer(n) for n in range(8)]
            await anyio.wait_all_tasks_blocked()
            release.set()
        return offered

    offered = anyio.run(main)
    # Two are taken by workers only once they run: up to backlog are queued before that.
    assert offered.count(True) == 3 and not all(offered)
    assert peak <= 2


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_tricky_text = st.text(alphabet=st.sampled_from(list(',"\\ab\u2028{}[]é')), max_size=12)
_tricky_json = st.recursive(
    st.none() | st.integers() | _tricky_text,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_tricky_text, inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(value=_tricky_json, window=st.integers(1, 9), limit=st.integers(0, 30))
def test_values_are_counted_as_commas_outside_strings_wherever_the_windows_cut(
    value: Any, window: int, limit: int
) -> None:
    """The windowed count is the whole line's (commas outside strings, escaped quotes and
    backslashes inside them), whatever the window, and says the same against any limit."""
    line = json.dumps(value, ensure_ascii=False).encode()
    outside = _JSON_STRING.sub(b"", line).count(b",")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inbound, "_WINDOW", window)
        assert inbound._more_values_than(line, limit) == (outside > limit)


class Gated:
    """An agent's stdin that takes nothing until the test opens it, then everything."""

    def __init__(self) -> None:
        self.open = anyio.Event()
        self.received = 0

    async def send(self, item: bytes) -> None:
        await self.open.wait()
        self.received += item.count(b"\n")

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("replies", [1, 3, 32, 100])
@pytest.mark.parametrize("size", [1 << 20, 4 << 20, 9 << 20])
def test_replies_built_or_waiting_while_the_agent_does_not_read_are_held_to_the_budget(
    replies: int, size: int
) -> None:
    """However many large replies an agent has not read yet, at most one is being built or
    waits to be queued beside the queue; a small reply never waits for room; once
    the agent reads, every reply is written."""
    stdin = Gated()
    outbox = Outbox(stdin)  # type: ignore[arg-type]
    in_hand = peak = 0
    small_in = anyio.Event()

    async def handler(i: int) -> None:
        nonlocal in_hand, peak
        async with outbox.reply_room(large=True):
            in_hand += 1  # from here it holds its reply until the put returns
            peak = max(peak, in_hand)
            await outbox.put(bytes(size), f"reply {i}")
            in_hand -= 1

    async def small() -> None:
        async with outbox.reply_room(large=False):
            small_in.set()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(outbox.run)
            for i in range(replies):
                tg.start_soon(handler, i)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(small)
            await anyio.wait_all_tasks_blocked()
            assert small_in.is_set()
            assert peak == min(replies, 1), peak
            stdin.open.set()
            await outbox.drain()
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert stdin.received == replies
    assert peak == 1
