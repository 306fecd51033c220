"""ACP v2 sessions beyond one turn, on the raw wire with the spy agent: ``session/resume``
for a continued session (no ``replayFrom``: the bridge needs no history), its state
snapshot never ending the next turn; follow-up turns in the live session, each prompt with
an ``idempotencyKey`` of its own; ``auth/login`` and ``auth/logout`` (v2's names, with auth
methods that name their id ``methodId``)."""

from __future__ import annotations

from typing import Any

import anyio

from acp_bridge._entries.acp_spawn.admin import agent_logout
from acp_bridge._entries.acp_spawn.live_turns import FollowUp, Held
from acp_bridge.envelope import SubtaskResult
from acp_bridge.errors import ErrorCode, NotOffered
from tests.spy import Spy

RUNNING = {"update": {"sessionUpdate": "state_update", "state": "running"}}


def v2(script: dict[str, Any], **init: Any) -> dict[str, Any]:
    return {
        "initialize": {
            "protocolVersion": 2,
            "info": {"name": "spy-v2", "version": "1"},
            "capabilities": {"session": {}},
            **init,
        },
        "prompt_reply": {"messageId": "user-1"},
        **script,
    }


def prompts(spy: Spy) -> list[dict[str, Any]]:
    return [m["params"] for m in spy.received() if m.get("method") == "session/prompt"]


def test_a_continued_v2_session_is_resumed_without_replay(spy: Spy) -> None:
    # What a v2 agent sends before its resume reply: the current state (idle, with the
    # last turn's stop reason for context) and session state. Neither is this turn's.
    snapshot = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
    title = {"sessionUpdate": "session_info_update", "title": "An old conversation"}
    script = v2({
        "resumed": [snapshot, title],
        "prompt": [RUNNING, {"say": "NEW ANSWER", "messageId": "m2"}],
        "answer": "",
    })  # fmt: skip
    result = spy.harness.run("spy", "go on", spy.config(script, protocol="auto"), resume="sess-old")
    assert (result.status, result.output) == ("done", "NEW ANSWER"), result.error
    assert spy.methods() == ["initialize", "session/resume", "session/prompt", "session/close"]
    resumed = spy.request("session/resume")["params"]
    assert resumed["sessionId"] == "sess-old" and resumed["cwd"] == str(spy.harness.workspace)
    assert "replayFrom" not in resumed  # omitted: resume without history
    assert (result.meta.session_id, result.meta.session_method) == ("sess-old", "session/resume")
    assert result.meta.session_title == "An old conversation"
    assert result.meta.replayed_updates is None
    (prompt,) = prompts(spy)
    assert prompt["sessionId"] == "sess-old" and isinstance(prompt["idempotencyKey"], str)


class Turns:
    """A follow-up hook handing over the given tasks, one per call."""

    def __init__(self, *tasks: str) -> None:
        self.tasks = list(tasks)
        self.seen: list[SubtaskResult] = []

    async def __call__(self, result: SubtaskResult, held: Held) -> FollowUp | None:
        self.seen.append(result)
        if not self.tasks:
            return None
        return FollowUp(self.tasks.pop(0), task_id=f"sub_turn_{len(self.seen) + 1}")


def test_each_turn_of_a_live_v2_session_has_its_own_idempotency_key(spy: Spy) -> None:
    script = v2({"prompt": [RUNNING, {"say": "ANSWER", "messageId": "m"}], "answer": ""})
    config = spy.config(script, timeouts={"idle": 30}, protocol="auto")
    hook = Turns("second", "third")
    result = spy.harness.run("spy", "first", config, follow_ups=hook)
    assert [r.output for r in hook.seen] == ["ANSWER"] * 3, result.error
    assert [r.status for r in hook.seen] == ["done"] * 3
    assert spy.methods() == ["initialize", "session/new", *["session/prompt"] * 3, "session/close"]
    sent = prompts(spy)
    assert [p["prompt"][0]["text"] for p in sent] == ["first", "second", "third"]
    keys = [p["idempotencyKey"] for p in sent]
    assert all(isinstance(k, str) and k for k in keys) and len(set(keys)) == 3


def test_a_v1_prompt_carries_no_idempotency_key(spy: Spy) -> None:
    result = spy.harness.run("spy", "go", spy.config({"answer": "ONE"}))
    assert result.status == "done", result.error
    (prompt,) = prompts(spy)
    assert "idempotencyKey" not in prompt


LOGIN = {"type": "agent", "methodId": "spy-login", "name": "Spy login"}


def test_auth_login_with_the_profiles_method(spy: Spy) -> None:
    script = v2({"prompt": [RUNNING], "answer": "IN"}, authMethods=[LOGIN])
    result = spy.harness.run(
        "spy", "go", spy.config(script, auth={"method": "spy-login"}, protocol="auto")
    )
    assert (result.status, result.output) == ("done", "IN"), result.error
    assert spy.methods() == [
        "initialize", "auth/login", "session/new", "session/prompt", "session/close"
    ]  # fmt: skip
    assert spy.request("auth/login")["params"] == {"methodId": "spy-login"}


def test_auth_required_on_v2_names_what_it_would_take(spy: Spy) -> None:
    terminal = {"type": "terminal", "methodId": "tui", "name": "Log in", "args": ["--login"]}
    required = {"code": -32000, "message": "Authentication required"}
    script = v2({"errors": {"session/new": required}}, authMethods=[LOGIN, terminal])
    result = spy.harness.run("spy", "go", spy.config(script, protocol="auto"))
    assert result.meta.error_code == ErrorCode.AUTH_REQUIRED
    assert "spy-login (Spy login) cannot be completed headless" in result.error
    assert "tui needs an interactive login: run `" in result.error and "--login`" in result.error
    assert "auth/login" not in spy.methods()  # nothing it could do without a person


def test_auth_logout_only_where_auth_methods_are_advertised(spy: Spy) -> None:
    config = spy.config(v2({}, authMethods=[LOGIN]), protocol="auto")
    anyio.run(lambda: agent_logout("spy", config=config))
    assert spy.methods() == ["initialize", "auth/logout"]
    spy.record.unlink()
    bare = spy.config(v2({}), protocol="auto")
    try:
        anyio.run(lambda: agent_logout("spy", config=bare))
    except NotOffered as exc:
        assert "logout" in str(exc)
    else:
        raise AssertionError("logout was called on an agent that offers no auth")
    assert spy.methods() == ["initialize"]
