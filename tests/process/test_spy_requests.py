"""Requests between the two sides, checked with the spy agent: ``$/cancel_request`` both
ways, elicitation (host hook, headless refusal), host hooks that pick an option, and the
file changes an agent reports beside those the sandbox measured."""

from __future__ import annotations

from typing import Any

import anyio

from acp_bridge._acp.services.elicitation import ElicitationAnswer, ElicitationQuestion
from acp_bridge._acp.services.permissions import PermissionQuestion
from acp_bridge.errors import ErrorCode
from tests.spy import Spy

ASK_EDITS = {"rules": [{"kind": "edit", "decision": "ask"}]}
OPTIONS = [
    {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "always", "name": "Allow always", "kind": "allow_always"},
    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
]
FORM = {
    "type": "object",
    "properties": {
        "strategy": {"type": "string", "enum": ["safe", "bold"]},
        "depth": {"type": "integer"},
    },
    "required": ["strategy"],
}


def permission_step(cancel: bool = False) -> dict[str, Any]:
    return {
        "request": "session/request_permission",
        "params": {
            "toolCall": {"toolCallId": "t1", "title": "Edit notes.md", "kind": "edit"},
            "options": OPTIONS,
        },
        "cancel": cancel,
    }


def test_the_agents_cancel_request_cancels_the_handler_and_gets_32800(spy: Spy) -> None:
    async def never(question: PermissionQuestion) -> bool:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    config = spy.config({"prompt": [permission_step(cancel=True)]}, permissions=ASK_EDITS)
    result = spy.harness.run("spy", "go", config, permission_hook=never)
    assert result.status == "done", result.error
    reply = spy.reply_to("spy-0")
    assert reply["error"] == {"code": -32800, "message": "Request cancelled"}
    # Cancelled before or while the host was asked: never an allow, and if the host was
    # asked, the ledger says so.
    records = result.meta.permissions or []
    assert all((r.decision, r.reason) == ("cancelled", "cancelled by the agent") for r in records)


def test_we_cancel_our_request_when_we_stop_waiting(spy: Spy) -> None:
    config = spy.config({"hang": ["session/new"]}, timeouts={"session": 0.5})
    result = spy.harness.run("spy", "go", config)
    assert result.meta.error_code == ErrorCode.TIMEOUT
    new = spy.request("session/new")
    assert spy.methods() == ["initialize", "session/new", "$/cancel_request"]
    assert spy.request("$/cancel_request")["params"] == {"requestId": new["id"]}


def test_a_host_hook_may_pick_one_of_the_offered_options(spy: Spy) -> None:
    asked: list[PermissionQuestion] = []

    async def pick(question: PermissionQuestion) -> str:
        asked.append(question)
        return "always"

    config = spy.config({"prompt": [permission_step()]}, permissions=ASK_EDITS)
    result = spy.harness.run("spy", "go", config, permission_hook=pick)
    assert result.status == "done", result.error
    assert [o.option_id for o in asked[0].options] == ["once", "always", "no"]
    outcome = spy.reply_to("spy-0")["result"]["outcome"]
    assert outcome == {"outcome": "selected", "optionId": "always"}
    (record,) = result.meta.permissions or []
    assert (record.decision, record.option_id) == ("allowed", "always")


def elicit_step(**params: Any) -> dict[str, Any]:
    return {"request": "elicitation/create", "params": params}


def test_elicitation_is_answered_by_the_host_hook(spy: Spy) -> None:
    questions: list[ElicitationQuestion] = []

    async def answer(question: ElicitationQuestion) -> ElicitationAnswer:
        questions.append(question)
        if question.mode == "url":
            return ElicitationAnswer("decline")
        return ElicitationAnswer("accept", {"strategy": "bold", "depth": 2})

    prompt = [
        elicit_step(mode="form", message="How bold?", requestedSchema=FORM),
        elicit_step(
            mode="url",
            message="Log in",
            elicitationId="e1",
            url="https://login.example.com/x?e=1",
        ),
    ]
    result = spy.harness.run("spy", "go", spy.config({"prompt": prompt}), elicitation_hook=answer)
    assert result.status == "done", result.error
    caps = spy.request("initialize")["params"]["clientCapabilities"]
    assert caps["elicitation"] == {"form": {}, "url": {}}
    assert spy.reply_to("spy-0")["result"] == {
        "action": "accept",
        "content": {"strategy": "bold", "depth": 2},
    }
    assert spy.reply_to("spy-1")["result"] == {"action": "decline"}
    assert questions[0].requested_schema == FORM and questions[1].url is not None
    records = result.meta.elicitations or []
    assert [(r.mode, r.action) for r in records] == [("form", "accept"), ("url", "decline")]
    assert records[0].fields == ["strategy", "depth"] and records[1].url_host == "login.example.com"


def test_an_answer_that_breaks_the_form_schema_is_sent_as_cancel(spy: Spy) -> None:
    async def sloppy(question: ElicitationQuestion) -> ElicitationAnswer:
        return ElicitationAnswer("accept", {"strategy": "reckless"})

    prompt = [elicit_step(mode="form", message="How bold?", requestedSchema=FORM)]
    result = spy.harness.run("spy", "go", spy.config({"prompt": prompt}), elicitation_hook=sloppy)
    assert spy.reply_to("spy-0")["result"] == {"action": "cancel"}
    (record,) = result.meta.elicitations or []
    assert record.action == "cancel" and "does not fit" in record.reason


def test_headless_elicitation_is_not_advertised_and_refused_clearly(spy: Spy) -> None:
    prompt = [elicit_step(mode="form", message="How bold?", requestedSchema=FORM)]
    result = spy.harness.run("spy", "go", spy.config({"prompt": prompt}))
    assert result.status == "done", result.error
    caps = spy.request("initialize")["params"]["clientCapabilities"]
    assert "elicitation" not in caps
    error = spy.reply_to("spy-0")["error"]
    assert error["code"] == -32602 and "headless" in error["message"]
    (record,) = result.meta.elicitations or []
    assert record.action == "refused"


def test_a_host_that_gives_no_answer_in_time_is_recorded_as_such(spy: Spy) -> None:
    async def too_late(question: PermissionQuestion) -> bool:
        raise TimeoutError  # what the MCP server's hook does after --ask-timeout

    config = spy.config({"prompt": [permission_step()]}, permissions=ASK_EDITS)
    result = spy.harness.run("spy", "go", config, permission_hook=too_late)
    assert result.status == "done", result.error
    (record,) = result.meta.permissions or []
    assert record.decision == "rejected"
    assert record.reason.endswith("the host gave no answer in time, rejected"), record.reason
    assert spy.reply_to("spy-0")["result"]["outcome"] == {"outcome": "selected", "optionId": "no"}


def test_reported_changes_match_the_measured_ones_and_a_refused_edit_is_not_one(
    spy: Spy,
) -> None:
    # opencode 1.18 reports a relative path (codex an absolute one) for a file the sandbox
    # measures by its absolute path; a refused edit's diff describes a change never made.
    written = str(spy.harness.workspace / "a.txt")
    outside = "/tmp/acp-bridge-refused-edit.txt"

    def tool(call_id: str, **body: Any) -> dict[str, Any]:
        return {"update": {"sessionUpdate": "tool_call_update", "toolCallId": call_id, **body}}

    def diff(path: str) -> list[dict[str, Any]]:
        return [{"type": "diff", "path": path, "oldText": None, "newText": "x\n"}]

    refused = {
        "toolCall": {"toolCallId": "t2", "kind": "edit", "locations": [{"path": outside}]},
        "options": OPTIONS,
    }
    steps = [
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "write a.txt",
                    "kind": "edit", "status": "pending"}},
        {"request": "fs/write_text_file", "params": {"path": written, "content": "x\n"}},
        tool("t1", status="completed", content=diff("a.txt")),
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "write outside",
                    "kind": "edit", "status": "pending", "content": diff(outside)}},
        {"request": "session/request_permission", "params": refused},
        tool("t2", status="failed"),
    ]  # fmt: skip
    result = spy.harness.run("spy", "go", spy.config({"prompt": steps, "answer": "OK"}))
    assert result.status == "done", result.error
    assert result.meta.files_changed == [written]
    assert result.meta.reported_changes == [
        {"operation": "add", "path": "a.txt", "tool_call_id": "t1"}
    ]
    assert not [w for w in result.meta.warnings or [] if "report" in w or "measure" in w]
