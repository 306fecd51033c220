"""TurnCollector on the message stream: grouping, the answer, and memory per chunk."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

from acp_bridge._acp.turn.turn_collector import TurnCollector
from acp_bridge.events import Event, EventSink


def chunk(text: str, message_id: str | None = None) -> dict[str, Any]:
    update: dict[str, Any] = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
    }
    if message_id is not None:
        update["messageId"] = message_id
    return {"sessionId": "s", "update": update}


def tool_call(call_id: str) -> dict[str, Any]:
    return {
        "sessionId": "s",
        "update": {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "t"},
    }


def collector(events: list[Event] | None = None) -> TurnCollector:
    sink = EventSink(events.append if events is not None else None)
    collect = TurnCollector(sink)
    collect.session_known("s")
    collect.begin_turn()
    return collect


def test_chunks_without_ids_concatenate_and_a_tool_call_starts_a_new_message() -> None:
    collect = collector()
    for params in (
        chunk("Let me "),
        chunk("look."),
        tool_call("c1"),
        chunk("The "),
        chunk("answer"),
    ):
        collect(params)
    assert collect.answer() == "The answer"


def test_message_ids_group_interleaved_chunks_and_the_last_message_wins() -> None:
    collect = collector()
    for params in (chunk("a1 ", "a"), chunk("b1 ", "b"), chunk("a2", "a"), chunk("b2", "b")):
        collect(params)
    assert collect.answer() == "b1 b2"


def test_a_blank_last_message_does_not_hide_the_answer() -> None:
    collect = collector()
    for params in (chunk("real answer", "m1"), chunk("  \n", "m2")):
        collect(params)
    assert collect.answer() == "real answer"


def test_chunks_before_the_turn_are_not_the_answer_and_a_new_turn_forgets() -> None:
    collect = TurnCollector(EventSink(None))
    collect.session_known("s")
    collect(chunk("replayed history"))
    collect.begin_turn()
    assert collect.answer() == ""
    collect(chunk("first"))
    collect.begin_turn()
    collect(chunk("second"))
    assert collect.answer() == "second"


def test_non_text_and_empty_chunks_are_skipped() -> None:
    collect = collector()
    collect(
        {
            "sessionId": "s",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "image", "data": "", "mimeType": "x"},
            },
        }
    )
    collect(chunk(""))
    collect(chunk("ok"))
    assert collect.answer() == "ok"


def test_message_events_carry_each_chunk() -> None:
    events: list[Event] = []
    collect = collector(events)
    collect(chunk("he"))
    collect(chunk("llo"))
    assert [e.data["text"] for e in events if e.kind == "message"] == ["he", "llo"]


def test_memory_held_grows_with_the_text_not_with_the_number_of_chunks() -> None:
    """A long stream of token-sized chunks must not cost an object per chunk
    (docs/explanation/performance.md: RSS flat in the number of updates); the answer's text itself
    is all that may grow."""
    texts = [f"t{i} " for i in range(50_000)]
    lines = [json.dumps(chunk(text)).encode() for text in texts]  # parsed inside, as on the wire
    text_bytes = sum(map(len, texts))
    collect = collector()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for line in lines:
            collect(json.loads(line))
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert collect.answer() == "".join(texts)
    assert held < 2 * text_bytes + 64 * 1024, f"{held} bytes held for {text_bytes} bytes of text"


def test_the_answer_is_cut_at_its_cap_in_memory_keeping_the_head() -> None:
    from acp_bridge._acp.turn.messages import MAX_ANSWER_BYTES

    collect = collector()
    collect(chunk("a" * (MAX_ANSWER_BYTES - 10)))
    collect(chunk("b" * 100))  # one chunk across the cap: its head is kept
    collect(chunk("c" * 100))
    answer = collect.answer()
    assert answer == "a" * (MAX_ANSWER_BYTES - 10) + "b" * 10
    assert collect.answer() is answer  # joined once, no copy for the next reader
    assert any("cut at 16 MiB" in w and "190 more" in w for w in collect.warnings())


def test_the_cap_counts_the_widest_character() -> None:
    from acp_bridge._acp.turn.messages import MAX_ANSWER_BYTES

    collect = collector()
    collect(chunk("😀"))  # the joined answer takes 4 bytes a character from here on
    collect(chunk("a" * (MAX_ANSWER_BYTES // 2)))
    assert collect.answer() == "😀" + "a" * (MAX_ANSWER_BYTES // 4 - 1)
    wide_later = collector()
    wide_later(chunk("a" * (MAX_ANSWER_BYTES // 2)))
    wide_later(chunk("😀" * 10))  # would make the kept half 4 bytes a character: not kept
    assert wide_later.answer() == "a" * (MAX_ANSWER_BYTES // 2)
    assert any("10 more" in w for w in wide_later.warnings())
