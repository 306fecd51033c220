"""Follow-up turns of a v2 agent from the command line — ``run --session``, ``send``,
``run --resume`` — each a run of its own that continues the session with ``session/resume``
(without ``replayFrom``), each prompt with an ``idempotencyKey`` of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.runs.conftest import RunsEnv
from tests.runs.test_send import cli
from tests.spy import Spy

V2 = {
    "initialize": {
        "protocolVersion": 2,
        "info": {"name": "spy-v2", "version": "1"},
        "capabilities": {"session": {}},
    },
    "prompt_reply": {"messageId": "user-1"},
    "resumed": [{"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}],
    "prompt": [{"update": {"sessionUpdate": "state_update", "state": "running"}}],
    "answer": "TURN DONE",
}


def test_follow_ups_of_a_v2_session_resume_it(
    runs: RunsEnv, spy: Spy, capsys: pytest.CaptureFixture[str]
) -> None:
    runs.loaded = spy.config(V2, protocol="auto")  # found by the CLI too: ./acp-bridge.yaml
    envelopes: list[dict[str, Any]] = []
    for argv in (
        ["run", "-q", "--session", "v2-chat", "spy", "first"],
        ["run", "-q", "--session", "v2-chat", "spy", "second"],
    ):
        code, envelope = cli(capsys, *argv)
        assert code == 0 and envelope["output"] == "TURN DONE", envelope
        envelopes.append(envelope)
    code, sent = cli(capsys, "send", "-q", envelopes[-1]["task_id"], "third")
    assert code == 0 and sent["output"] == "TURN DONE", sent
    session = envelopes[0]["meta"]["session_id"]
    code, resumed = cli(capsys, "run", "-q", "--resume", session, "spy", "fourth")
    assert code == 0 and resumed["output"] == "TURN DONE", resumed
    followed = [*envelopes[1:], sent, resumed]
    assert [e["meta"]["session_method"] for e in followed] == ["session/resume"] * 3
    assert {e["meta"]["session_id"] for e in followed} == {session}
    assert {e["meta"]["protocol_version"] for e in [envelopes[0], *followed]} == {2}

    turn = ["initialize", "session/resume", "session/prompt", "session/close"]
    assert spy.methods() == ["initialize", "session/new", *turn[2:], *turn * 3]
    resumes = [m["params"] for m in spy.received() if m.get("method") == "session/resume"]
    assert all(r["sessionId"] == session and "replayFrom" not in r for r in resumes)
    sent_prompts = [m["params"] for m in spy.received() if m.get("method") == "session/prompt"]
    assert [p["prompt"][0]["text"] for p in sent_prompts] == ["first", "second", "third", "fourth"]
    keys = {p["idempotencyKey"] for p in sent_prompts}
    assert len(keys) == 4  # the bridge never retries a prompt: one key per turn
