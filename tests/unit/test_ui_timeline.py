"""A page of events as timeline items: chunks of one text joined, a tool call's updates
folded into it, other kinds kept as they are; a diff's lines told apart."""

from __future__ import annotations

import json
from typing import Any

from acp_bridge._ui.timeline import diff_lines, timeline


def events(*given: dict[str, Any]) -> list[tuple[int, str]]:
    return [
        (n, json.dumps({"task_id": "t", "elapsed": n / 10, **e})) for n, e in enumerate(given, 1)
    ]


def test_chunks_of_one_text_are_one_item_and_a_new_kind_starts_another() -> None:
    items = timeline(
        events(
            {"kind": "message", "text": "Hel"},
            {"kind": "message", "text": "lo <b>"},
            {"kind": "thought", "text": "hmm"},
            {"kind": "message", "text": "again"},
            {"kind": "terminal_output", "terminal_id": "a", "text": "1"},
            {"kind": "terminal_output", "terminal_id": "b", "text": "2"},
        )
    )
    assert [(i.kind, i.text, i.seq) for i in items] == [
        ("message", "Hello <b>", 2),
        ("thought", "hmm", 3),
        ("message", "again", 4),
        ("terminal_output", "1", 5),
        ("terminal_output", "2", 6),
    ]


def test_a_tool_calls_updates_fold_into_it_and_an_orphan_update_stays() -> None:
    items = timeline(
        events(
            {"kind": "tool_update", "tool_call_id": "c0", "status": "completed"},
            {"kind": "tool_call", "tool_call_id": "c1", "title": "run x", "tool_kind": "execute"},
            {"kind": "permission", "tool_call_id": "c1", "decision": "allowed", "reason": "rule 1"},
            {"kind": "tool_update", "tool_call_id": "c1", "status": "in_progress"},
            {"kind": "tool_update", "tool_call_id": "c1", "status": "completed"},
        )
    )
    assert [i.kind for i in items] == ["tool_update", "tool_call", "permission"]
    call = items[1]
    assert call.data["status"] == "completed" and call.seq == 5 and call.text == "run x"
    assert items[2].data["reason"] == "rule 1"
    assert "elapsed" not in call.data and "task_id" not in call.data


def test_a_child_sessions_updates_are_one_item_with_its_latest_state() -> None:
    items = timeline(
        events(
            {"kind": "subagent", "what": "announced", "id": "s1", "status": "running"},
            {"kind": "message", "text": "meanwhile"},
            {"kind": "subagent", "what": "announced", "id": "s2", "status": "running",
             "title": "tests"},
            {"kind": "subagent", "what": "state", "id": "s1", "status": "completed",
             "usage": {"total_tokens": 7}},
        )
    )  # fmt: skip
    assert [(i.kind, i.text, i.seq) for i in items] == [
        ("subagent", "s1", 4), ("message", "meanwhile", 2), ("subagent", "tests", 3),
    ]  # fmt: skip
    assert items[0].data["status"] == "completed" and items[0].data["usage"]["total_tokens"] == 7


def test_diff_lines_are_told_apart_and_cut_at_the_limit() -> None:
    diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n same"
    lines, cut = diff_lines(diff)
    assert [line.kind for line in lines] == [
        "file", "file", "file", "hunk", "del", "add", "context",
    ]  # fmt: skip
    assert not cut
    lines, cut = diff_lines(diff, limit=3)
    assert len(lines) == 3 and cut
