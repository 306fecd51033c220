"""Every capped table of a turn, full or given an oversize key: what does not fit is dropped
and counted, never taken as another owner's (issue 37, class 3).

One table test over the members: for each table (child sessions, tool calls, plans,
compactions, file changes reported, messages, updates before the session's id), it is filled
to its cap with entries — one of them under an id of exactly the longest length kept — and
then an intruder arrives: a new entry past the cap, or one whose id is that kept id plus one
character (a table that cut its keys would take it as the kept one). Whatever the intruder's
updates say (a child's message, a completed tool call with a diff, a plan, a failed
compaction), everything the turn reports is unchanged and a warning counts the drop.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from acp_bridge._acp.turn import file_changes, notices, plans, subagents, tool_calls
from acp_bridge._acp.turn.messages import MAX_MESSAGES
from acp_bridge._acp.turn.turn_collector import MAX_EARLY, TurnCollector
from acp_bridge.events import EventSink

PARENT = "parent-session"


def update(kind: str, session: str = PARENT, **fields: Any) -> dict[str, Any]:
    return {"sessionId": session, "update": {"sessionUpdate": kind, **fields}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def reported(collector: TurnCollector) -> str:
    """Everything the turn reports, as one text: the answer, usage, tool calls, changes,
    plan, notices, compactions, children."""
    records = collector.tool_call_records()
    return json.dumps(
        {
            "answer": collector.answer(),
            "usage": dict(collector.usage),
            "tool_calls": [r.model_dump() for r in records] if records else None,
            "changes": collector.tools.reported_changes(),
            "plan": collector.plan,
            "notices": collector.notices.records(),
            "children": collector.subagents.records(),
        },
        sort_keys=True,
        default=str,
    )


# --- the members: how each table is filled, and what an intruder sends ---------------------


def fill_children(c: TurnCollector, long_id: str) -> None:
    for child in [long_id, *(f"child-{i}" for i in range(1, subagents.MAX_CHILDREN))]:
        c(update("subagent_update", sessionId=child, title="kept"))


def child_intruder(c: TurnCollector, child: str) -> None:
    c(update("subagent_update", sessionId=child, title="intruder"))
    c(update("agent_message_chunk", child, content=text("THE CHILD'S WORDS")))
    c(update("agent_message", child, messageId="m-child", content=[text("THE CHILD'S")]))
    c(update("usage_update", child, used=10**6, size=10**6))
    c(update("state_update", child, state="idle", usage={"totalTokens": 10**6}))
    c(update("tool_call", child, toolCallId="child-call", title="rm -rf", status="completed"))
    c(update("plan", child, entries=[{"content": "THE CHILD'S PLAN"}]))


def fill_tool_calls(c: TurnCollector, long_id: str) -> None:
    for call in [long_id, *(f"call-{i}" for i in range(1, tool_calls.MAX_TOOL_CALLS))]:
        c(update("tool_call", toolCallId=call, title="kept", status="pending"))


def tool_call_intruder(c: TurnCollector, call: str) -> None:
    diff = {"type": "diff", "path": "/w/intruder.txt", "oldText": "", "newText": "x"}
    c(update("tool_call_update", toolCallId=call, status="completed", content=[diff]))
    c(update("tool_call_content_chunk", toolCallId=call, content=diff))


def fill_plans(c: TurnCollector, long_id: str) -> None:
    for plan in [long_id, *(f"plan-{i}" for i in range(1, plans.MAX_PLANS))]:
        entries = [{"content": f"kept {plan[:8]}"}]
        c(update("plan_update", plan={"planId": plan, "type": "items", "entries": entries}))


def plan_intruder(c: TurnCollector, plan: str) -> None:
    entries = [{"content": "THE INTRUDER'S PLAN"}]
    c(update("plan_update", plan={"planId": plan, "type": "items", "entries": entries}))
    c(update("plan_update", plan={"planId": plan, "type": "markdown", "content": "# mine"}))
    c(update("plan_removed", planId=plan))


def fill_compactions(c: TurnCollector, long_id: str) -> None:
    for compaction in [long_id, *(f"comp-{i}" for i in range(1, notices.MAX_COMPACTIONS))]:
        c(update("compaction_update", compactionId=compaction, status="completed"))


def compaction_intruder(c: TurnCollector, compaction: str) -> None:
    c(update("compaction_update", compactionId=compaction, status="failed", error="boom"))
    c(update("compaction_summary_chunk", compactionId=compaction, content=text("summary")))


def fill_changes(c: TurnCollector, long_path: str) -> None:
    paths = [long_path, *(f"/w/kept-{i}" for i in range(1, file_changes.MAX_CHANGES))]
    changes = [{"path": p, "operation": "modify"} for p in paths]
    diff = {"type": "diff", "changes": changes}
    c(update("tool_call", toolCallId="edits", status="completed", content=[diff]))


def change_intruder(c: TurnCollector, path: str) -> None:
    diff = {"type": "diff", "changes": [{"path": path, "operation": "delete"}]}
    c(update("tool_call_update", toolCallId="edits", content=[diff]))
    c(update("tool_call_content_chunk", toolCallId="edits", content=diff))


@dataclass(frozen=True)
class Table:
    name: str
    """The table, as its warning names it."""
    fill: Callable[[TurnCollector, str], None]
    intrude: Callable[[TurnCollector, str], None]
    key_chars: int
    """The longest key kept."""


TABLES = [
    Table("child sessions", fill_children, child_intruder, subagents.MAX_ID_CHARS),
    Table("tool calls", fill_tool_calls, tool_call_intruder, tool_calls.MAX_ID_CHARS),
    Table("plans", fill_plans, plan_intruder, plans.MAX_ID_CHARS),
    Table("compactions", fill_compactions, compaction_intruder, notices.MAX_ID_CHARS),
    Table("file changes reported", fill_changes, change_intruder, file_changes.PATH_CHARS),
]


def filled(table: Table) -> tuple[TurnCollector, str]:
    """A turn with the parent's answer, and ``table`` full; the kept id of the longest
    length."""
    c = TurnCollector(EventSink(None))
    c.session_known(PARENT)
    c.begin_turn()
    c(update("agent_message_chunk", content=text("the parent's answer")))
    long_id = "/" + "k" * (table.key_chars - 1)
    table.fill(c, long_id)
    return c, long_id


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
@pytest.mark.parametrize("how", ["full", "oversize key"])
def test_what_does_not_fit_is_dropped_counted_and_never_another_owners(
    table: Table, how: str
) -> None:
    c, long_id = filled(table)
    before = reported(c)
    assert c.warnings() == []
    intruder = long_id + "!" if how == "oversize key" else "/the-one-past-the-cap"
    table.intrude(c, intruder)
    assert reported(c) == before
    warned = [w for w in c.warnings() if w.startswith(f"{table.name}:")]
    assert len(warned) == 1, c.warnings()
    counted = "longer than" if how == "oversize key" else "kept the first"
    assert counted in warned[0]


@pytest.mark.parametrize("how", ["never announced", "past the cap", "oversize id"])
def test_a_sessions_message_that_is_not_this_ones_is_never_its_answer(how: str) -> None:
    """The issue's example: past 256 children, or with an id longer than 256 characters, a
    child's message became the parent's answer."""
    table = TABLES[0]
    c, long_id = filled(table) if how != "never announced" else (None, "")
    if c is None:
        c = TurnCollector(EventSink(None))
        c.session_known(PARENT)
        c.begin_turn()
        c(update("agent_message_chunk", content=text("the parent's answer")))
    child = {"past the cap": "/one-more", "oversize id": long_id + "x" * 1000}.get(how, "stray")
    if how != "never announced":
        c(update("subagent_update", sessionId=child, title="late"))
    c(update("agent_message_chunk", child, content=text("THE CHILD'S WORDS")))
    assert c.answer() == "the parent's answer"
    assert any("never its answer" in w for w in c.warnings()), c.warnings()


def test_a_notice_past_the_cap_is_counted() -> None:
    c = TurnCollector(EventSink(None))
    c.session_known(PARENT)
    c.begin_turn()
    for i in range(notices.MAX_NOTICES + 3):
        c(update("notice", title=f"n{i}", severity="info"))
    kept, _ = c.notices.records()
    assert kept is not None and len(kept) == notices.MAX_NOTICES
    assert "notices: kept the first 256, 3 more not kept" in c.warnings()


def test_a_chunk_of_a_message_dropped_past_the_cap_does_not_become_the_answer() -> None:
    c = TurnCollector(EventSink(None))
    c.session_known(PARENT)
    c.begin_turn()
    for i in range(MAX_MESSAGES + 1):
        c(update("agent_message_chunk", messageId=f"m{i}", content=text(f"message {i}")))
    answer = c.answer()
    c(update("agent_message_chunk", messageId="m0", content=text(" and more")))
    c(update("agent_message", messageId="m1", content=[text("whole again")]))
    assert c.answer() == answer == f"message {MAX_MESSAGES}"
    assert any("chunk(s) of messages dropped" in w for w in c.warnings())


def test_updates_before_the_sessions_id_are_held_boundedly_and_judged_by_it() -> None:
    c = TurnCollector(EventSink(None))
    c.begin_turn()
    c(update("agent_message_chunk", "another", content=text("NOT OURS")))
    c(update("agent_message_chunk", content=text("ours")))
    for _ in range(MAX_EARLY):
        c(update("usage_update", used=1, size=2))
    c.session_known(PARENT)
    assert c.answer() == "ours"
    assert any("before the session's id was known" in w for w in c.warnings())
    assert any("never its answer" in w for w in c.warnings())
