"""Stable v1 from schema 1.22 on, checked with the spy agent: tool names in the ledger,
events and rules; notices; compaction; plan operations; systemPrompt only where advertised;
subagent sessions followed, counted and cancelled first."""

from __future__ import annotations

from typing import Any

from acp_bridge._runs.budget import usage_figures
from acp_bridge.errors import ErrorCode
from acp_bridge.events import Event
from tests.spy import Spy

OPTIONS = [
    {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]


def upd(update_kind: str, /, **body: Any) -> dict[str, Any]:
    return {"update": {"sessionUpdate": update_kind, **body}}


def run_with_events(spy: Spy, config: Any, **kwargs: Any) -> tuple[Any, list[Event]]:
    events: list[Event] = []
    result = spy.harness.run("spy", "go", config, on_event=events.append, **kwargs)
    return result, events


def test_a_rule_may_match_the_tool_name(spy: Spy) -> None:
    ask = {
        "toolCall": {"toolCallId": "t1", "title": "Run it", "kind": "execute", "name": "safe_tool"},
        "options": OPTIONS,
    }
    steps = [
        upd("tool_call", toolCallId="t1", title="Run it", kind="execute", name="safe_tool"),
        {"request": "session/request_permission", "params": ask},
    ]
    rules = [{"name": "safe_*", "kind": "execute", "decision": "allow"}]
    config = spy.config({"prompt": steps}, permissions={"mode": "workspace-write", "rules": rules})
    result, events = run_with_events(spy, config)
    assert result.status == "done", result.error
    (decision,) = result.meta.permissions or []
    assert (decision.name, decision.decision, decision.reason) == (
        "safe_tool",
        "allowed",
        "rule 1 (allow)",
    )
    (call,) = result.meta.tool_calls or []
    assert call.name == "safe_tool"
    assert [e.data.get("tool_name") for e in events if e.kind == "tool_call"] == ["safe_tool"]


def test_notices_and_compaction_are_events_never_the_answer(spy: Spy) -> None:
    steps = [
        {"say": "THE ANSWER", "messageId": "m1"},
        upd("notice", severity="warning", title="Rate limited", description="retrying"),
        upd("compaction_update", compactionId="c1", status="in_progress"),
        upd(
            "compaction_summary_chunk",
            compactionId="c1",
            content={"type": "text", "text": "SUMMARY"},
        ),
        upd("compaction_update", compactionId="c1", status="completed"),
    ]
    result, events = run_with_events(spy, spy.config({"prompt": steps, "answer": ""}))
    assert (result.status, result.output) == ("done", "THE ANSWER"), result.error
    assert result.meta.notices == [
        {"severity": "warning", "title": "Rate limited", "description": "retrying"}
    ]
    assert result.meta.compactions == [
        {"compaction_id": "c1", "status": "completed", "summary_chars": 7}
    ]
    kinds = [e.kind for e in events]
    assert "notice" in kinds and kinds.count("compaction") == 2
    sent = spy.request("initialize")["params"]["clientCapabilities"]["session"]
    assert sent["notices"] == {} and sent["compaction"] == {}


def test_plan_operations_are_applied_to_meta_plan(spy: Spy) -> None:
    entry = {"content": "step", "priority": "high", "status": "pending"}
    steps = [
        upd("plan", entries=[{**entry, "content": "whole"}]),
        upd("plan_update", plan={"type": "items", "planId": "p1", "entries": [entry]}),
        upd("plan_update", plan={"type": "markdown", "planId": "p2", "content": "# Plan"}),
        upd("plan_removed", planId="p1"),
    ]
    config = spy.config({"prompt": steps}, unstable=True)
    result = spy.harness.run("spy", "go", config)
    assert result.status == "done", result.error
    assert result.meta.plan == [
        {"content": "whole", "priority": "high", "status": "pending"},
        {"plan_id": "p2", "format": "markdown", "content": "# Plan"},
    ]
    assert spy.request("initialize")["params"]["clientCapabilities"]["plan"] == {}


def test_system_prompt_is_sent_only_where_advertised(spy: Spy) -> None:
    refused = spy.harness.run("spy", "go", spy.config(), system_prompt="Be brief.")
    assert refused.meta.error_code == ErrorCode.CONFIG_ERROR
    assert "sessionCapabilities.systemPrompt" in refused.error
    assert spy.methods() == ["initialize"]

    spy.record.unlink()
    caps = {"agentCapabilities": {"sessionCapabilities": {"systemPrompt": {}}}}
    config = spy.config({"initialize": caps}, session={"system_prompt": "From the profile."})
    result = spy.harness.run("spy", "go", config)
    assert result.status == "done", result.error
    assert spy.request("session/new")["params"]["systemPrompt"] == {
        "mode": "append",
        "content": [{"type": "text", "text": "From the profile."}],
    }
    spy.record.unlink()
    spy.harness.run("spy", "go", spy.config({}))  # none set: none sent
    assert "systemPrompt" not in spy.request("session/new")["params"]


CHILD = "child-1"


def announce(**body: Any) -> dict[str, Any]:
    return upd("subagent_update", sessionId=CHILD, **body)


def test_a_subagent_is_followed_counted_and_never_the_answer(spy: Spy) -> None:
    steps = [
        announce(title="Searcher", capabilities={"cancel": {}}, state={"state": "running"}),
        {
            "session": CHILD,
            **upd(
                "agent_message_chunk",
                messageId="cm",
                content={"type": "text", "text": "CHILD TEXT"},
            ),
        },
        {"session": CHILD, **upd("usage_update", used=500, size=1000)},
        upd(
            "session_message",
            messageId="sm1",
            senderSessionId=CHILD,
            recipientSessionId="spy-session-1",
        ),
        announce(
            state={
                "state": "idle",
                "stopReason": "end_turn",
                "usage": {"totalTokens": 1200, "inputTokens": 1000, "outputTokens": 200},
            }
        ),
        {"say": "PARENT ANSWER", "messageId": "m1"},
    ]
    config = spy.config({"prompt": steps, "answer": ""}, unstable=True)
    result, events = run_with_events(spy, config)
    assert (result.status, result.output) == ("done", "PARENT ANSWER"), result.error
    assert result.meta.subagents == [
        {
            "id": CHILD,
            "status": "idle",
            "title": "Searcher",
            "stop_reason": "end_turn",
            "usage": {"total_tokens": 1200},
            "messages": 1,
        }
    ]
    usage = result.meta.usage or {}
    assert usage["subagent_tokens"] == 1200
    assert usage_figures(usage)[0] == 1200  # what max_tokens and group budgets count
    assert any(e.kind == "subagent" for e in events)
    assert result.meta.unknown_updates is None
    assert spy.request("initialize")["params"]["clientCapabilities"]["subagents"] == {}


def test_stop_cancels_the_child_first(spy: Spy) -> None:
    steps = [
        announce(title="Worker", capabilities={"cancel": {}}, state={"state": "running"}),
        {"wait_cancel": True},
    ]
    config = spy.config({"prompt": steps}, unstable=True)
    result = spy.harness.run("spy", "go", config, timeout=2)
    assert result.meta.error_code == ErrorCode.TIMEOUT
    cancels = [
        m["params"]["sessionId"] for m in spy.received() if m.get("method") == "session/cancel"
    ]
    assert cancels == [CHILD, "spy-session-1"]


def test_without_the_opt_in_no_subagent_capability_is_offered(spy: Spy) -> None:
    spy.harness.run("spy", "go", spy.config())
    caps = spy.request("initialize")["params"]["clientCapabilities"]
    assert "subagents" not in caps and "plan" not in caps
