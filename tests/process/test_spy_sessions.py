"""Session lifecycle methods, checked with the spy agent: each used in the right order, and
never one the agent did not advertise (resume, load, fork, close, list, delete, logout)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from acp_bridge._entries.acp_spawn.admin import agent_logout, agent_sessions, delete_agent_session
from acp_bridge.errors import ErrorCode, NotOffered
from tests.spy import Spy

HISTORY: list[dict[str, Any]] = [
    {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "old ask"}},
    {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "old-1",
        "content": {"type": "text", "text": "OLD ANSWER"},
    },
    {"sessionUpdate": "tool_call", "toolCallId": "old-t", "title": "ls", "kind": "execute"},
    {"sessionUpdate": "plan", "entries": [{"content": "old step", "status": "completed"}]},
    {"sessionUpdate": "session_info_update", "title": "An old conversation"},
]


def test_resume_prefers_session_resume(spy: Spy) -> None:
    caps = {"loadSession": True, "sessionCapabilities": {"resume": {}}}
    config = spy.config({"initialize": {"agentCapabilities": caps}, "answer": "NEW"})
    result = spy.harness.run("spy", "go on", config, resume="sess-old")
    assert result.status == "done", result.error
    assert spy.methods() == ["initialize", "session/resume", "session/prompt"]
    resumed = spy.request("session/resume")["params"]
    assert resumed["sessionId"] == "sess-old" and resumed["mcpServers"] == []
    assert resumed["cwd"] == str(spy.harness.workspace)
    assert spy.request("session/prompt")["params"]["sessionId"] == "sess-old"
    assert (result.meta.session_id, result.meta.session_method) == ("sess-old", "session/resume")


def test_load_replays_history_that_is_not_this_turns_answer(spy: Spy) -> None:
    script = {
        "initialize": {"agentCapabilities": {"loadSession": True}},
        "replay": HISTORY,
        "prompt": [{"say": "NEW ANSWER", "messageId": "new-1"}],
        "answer": "",  # empty: the answer stays the message above
    }
    result = spy.harness.run("spy", "go on", spy.config(script), resume="sess-old")
    assert result.status == "done", result.error
    assert spy.methods() == ["initialize", "session/load", "session/prompt"]
    assert result.output == "NEW ANSWER"
    assert result.meta.message_id == "new-1"
    assert result.meta.session_method == "session/load"
    # History is counted, not taken for this turn's tool calls or plan; its title is state.
    assert result.meta.replayed_updates == 4
    assert result.meta.tool_calls is None and result.meta.plan is None
    assert result.meta.session_title == "An old conversation"


def test_resume_without_resume_or_load_is_an_error_not_a_new_session(spy: Spy) -> None:
    result = spy.harness.run("spy", "go on", spy.config(), resume="sess-old")
    assert result.status == "failed"
    assert result.meta.error_code == ErrorCode.CONFIG_ERROR
    assert "neither session/resume nor session/load" in result.error
    assert spy.methods() == ["initialize"]


def test_fork_needs_the_unstable_opt_in_and_the_capability(spy: Spy) -> None:
    caps = {"sessionCapabilities": {"fork": {}, "resume": {}}}
    config = spy.config({"initialize": {"agentCapabilities": caps}, "answer": "FORKED"})
    refused = spy.harness.run("spy", "try", config, resume="sess-old", fork=True)
    assert refused.meta.error_code == ErrorCode.CONFIG_ERROR
    assert "unstable" in refused.error and "--unstable" in refused.error
    assert spy.methods() == ["initialize"]

    spy.record.unlink()
    result = spy.harness.run("spy", "try", config, resume="sess-old", fork=True, unstable=True)
    assert result.status == "done", result.error
    assert spy.methods() == ["initialize", "session/fork", "session/prompt"]
    assert result.meta.session_id == "sess-old-fork"
    assert result.meta.session_method == "session/fork"


def test_fork_is_refused_when_the_agent_does_not_offer_it(spy: Spy) -> None:
    config = spy.config({"initialize": {"agentCapabilities": {"loadSession": True}}})
    result = spy.harness.run("spy", "x", config, resume="s", fork=True, unstable=True)
    assert "does not offer session/fork" in result.error
    assert spy.methods() == ["initialize"]


@pytest.mark.parametrize("advertised", [True, False])
def test_close_only_when_advertised(spy: Spy, advertised: bool) -> None:
    caps = {"sessionCapabilities": {"close": {}}} if advertised else {}
    config = spy.config({"initialize": {"agentCapabilities": caps}})
    result = spy.harness.run("spy", "hi", config)
    assert result.status == "done", result.error
    tail = ["session/close"] if advertised else []
    assert spy.methods() == ["initialize", "session/new", "session/prompt", *tail]
    assert spy.request("session/new")["params"] == {
        "cwd": str(spy.harness.workspace),
        "mcpServers": [],
    }


SESSIONS = [
    {"sessionId": f"s{i}", "cwd": "/somewhere", "title": f"Title {i}", "updatedAt": "2026-01-0{i}"}
    for i in range(1, 4)
]


def test_list_pages_through_every_session(spy: Spy) -> None:
    caps = {"sessionCapabilities": {"list": {}}}
    config = spy.config(
        {"initialize": {"agentCapabilities": caps}, "sessions": SESSIONS, "pageSize": 2}
    )
    found = anyio.run(lambda: agent_sessions("spy", config=config, all_dirs=True))
    assert [(s.session_id, s.title) for s in found] == [(f"s{i}", f"Title {i}") for i in (1, 2, 3)]
    assert spy.methods() == ["initialize", "session/list", "session/list"]
    pages = [m["params"] for m in spy.received() if m.get("method") == "session/list"]
    assert pages == [{}, {"cursor": "2"}]


def test_list_filters_by_the_session_cwd_by_default(spy: Spy) -> None:
    here = str(spy.harness.workspace)
    sessions = [*SESSIONS, {"sessionId": "mine", "cwd": here}]
    caps = {"sessionCapabilities": {"list": {}}}
    config = spy.config({"initialize": {"agentCapabilities": caps}, "sessions": sessions})
    found = anyio.run(lambda: agent_sessions("spy", config=config, cwd=here))
    assert [s.session_id for s in found] == ["mine"]
    assert spy.request("session/list")["params"] == {"cwd": here}


@pytest.mark.parametrize(
    ("call", "method"),
    [
        (lambda config: agent_sessions("spy", config=config), "session/list"),
        (lambda config: delete_agent_session("spy", "s1", config=config), "session/delete"),
        (lambda config: agent_logout("spy", config=config), "logout"),
    ],
)
def test_methods_not_advertised_are_not_called(spy: Spy, call: Any, method: str) -> None:
    config = spy.config()
    with pytest.raises(NotOffered, match=method):
        anyio.run(lambda: call(config))
    assert spy.methods() == ["initialize"]


def test_delete_and_logout_when_advertised(spy: Spy) -> None:
    caps = {"sessionCapabilities": {"delete": {}}, "auth": {"logout": {}}}
    config = spy.config({"initialize": {"agentCapabilities": caps}})
    anyio.run(lambda: delete_agent_session("spy", "s1", config=config))
    anyio.run(lambda: agent_logout("spy", config=config))
    assert spy.methods() == ["initialize", "session/delete", "initialize", "logout"]
    assert spy.request("session/delete")["params"] == {"sessionId": "s1"}
    assert spy.request("logout")["params"] == {}
