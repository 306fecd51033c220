"""Stable by default, and never a protocol_error or a timeout for an agent that speaks v1
correctly (issue 33), checked with the spy agent on the raw wire: v1 unless the profile opts
into the v2 Preview; under ``protocol: auto`` an agent that echoes version 2 in v1's shape is
spoken as v1, and one whose v2 session setup does not validate is restarted once on v1; a
v2 turn ended the v1 way ends there; v2 config options read and set as the v2 schema says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_bridge.errors import ErrorCode
from tests.spy import Spy

V2_INIT: dict[str, Any] = {
    "protocolVersion": 2,
    "info": {"name": "spy-v2", "version": "1"},
    "capabilities": {"session": {}},
}
V1_INIT: dict[str, Any] = {
    "protocolVersion": 1,
    "agentCapabilities": {},
    "agentInfo": {"name": "spy-v1", "version": "1"},
}
RUNNING = {"update": {"sessionUpdate": "state_update", "state": "running"}}
EFFORT_V2 = {
    "configId": "effort",
    "name": "Effort",
    "type": "select",
    "currentValue": "high",
    "options": [{"value": "low", "name": "Low"}, {"value": "high", "name": "High"}],
}


def warned(result: Any, text: str) -> bool:
    return any(text in warning for warning in result.meta.warnings or [])


def initialize_versions(spy: Spy) -> list[int]:
    return [
        m["params"]["protocolVersion"] for m in spy.received() if m.get("method") == "initialize"
    ]


def test_a_profile_speaks_v1_unless_it_opts_into_v2(spy: Spy) -> None:
    result = spy.harness.run("spy", "go", spy.config({"answer": "ONE"}))
    assert (result.status, result.meta.protocol_version) == ("done", 1), result.error
    sent = spy.request("initialize")["params"]
    assert sent["protocolVersion"] == 1
    assert "info" not in sent and "capabilities" not in sent  # v2's keys: only when asked


@pytest.mark.parametrize("protocol", [1, 2])
def test_protocol_may_be_written_as_a_yaml_number(spy: Spy, protocol: int) -> None:
    script = {"echo_version": True, "answer": "OK"}
    result = spy.harness.run("spy", "go", spy.config(script, protocol=protocol), timeout=8)
    assert spy.request("initialize")["params"]["protocolVersion"] == protocol
    assert result.meta.protocol_version == protocol, result.error


def test_an_agent_echoing_2_in_v1s_shape_is_spoken_as_v1_under_auto(spy: Spy) -> None:
    # fast-agent 0.10.45-0.10.48, goose 1.52: asked for 2, they answer 2 and speak v1
    # (agentCapabilities, agentInfo; the turn ends with the prompt's reply).
    script = {"echo_version": True, "answer": "ONE"}
    result = spy.harness.run("spy", "go", spy.config(script, protocol="auto"), timeout=8)
    assert (result.status, result.output) == ("done", "ONE"), result.error
    assert result.meta.protocol_version == 1
    assert warned(result, "answered protocolVersion 2 in v1's shape")
    assert initialize_versions(spy) == [2]  # one initialize: auto's carries v1's keys too


@pytest.mark.parametrize("protocol", ["auto", "2"])
def test_a_v2_turn_ended_by_a_v1_stop_reason_ends_there(spy: Spy, protocol: str) -> None:
    # A v2 agent whose prompt reply is v1's {stopReason} (no idle ever comes).
    script = {"initialize": V2_INIT, "prompt": [RUNNING], "answer": "TWO"}
    result = spy.harness.run("spy", "go", spy.config(script, protocol=protocol), timeout=8)
    assert (result.status, result.output) == ("done", "TWO"), result.error
    assert (result.meta.protocol_version, result.meta.stop_reason) == (2, "end_turn")
    assert warned(result, "ended a v2 turn the v1 way")


def test_v2_config_options_are_read_by_config_id_and_set_with_their_type(spy: Spy) -> None:
    fast = {"configId": "fast", "name": "Fast", "type": "boolean", "currentValue": False}
    update = {
        "sessionUpdate": "config_option_update",
        "configOptions": [{**EFFORT_V2, "currentValue": "low"}, {**fast, "currentValue": True}],
    }
    script = {
        "initialize": V2_INIT,
        "session": {"configOptions": [EFFORT_V2, fast]},
        "prompt_reply": {"messageId": "u1"},
        "prompt": [RUNNING, {"update": update}],
        "answer": "OK",
    }
    config = spy.config(script, protocol="2")
    result = spy.harness.run("spy", "go", config, config_options={"effort": "low", "fast": True})
    assert result.status == "done", result.error
    assert result.meta.config_options == {"effort": "low", "fast": True}
    sets = [m["params"] for m in spy.received() if m.get("method") == "session/set_config_option"]
    assert sets == [  # v2 tags every value: "id" for a select's value id
        {"sessionId": "spy-session-1", "configId": "effort", "value": "low", "type": "id"},
        {"sessionId": "spy-session-1", "configId": "fast", "value": True, "type": "boolean"},
    ]
    assert not [w for w in result.meta.warnings or [] if "config" in w or "messageId" in w]


def malformed_for_v2(**v1: Any) -> dict[str, Any]:
    """A v2 agent whose session/new reply keys its config option ``id`` (v1's key: malformed
    in v2, fine in v1), and that speaks v1 when asked for it."""
    option = {**EFFORT_V2, "id": "effort"}
    del option["configId"]
    return {
        "initialize": V2_INIT,
        "session": {"configOptions": [option]},
        "prompt_reply": {"messageId": "u1"},
        "prompt": [RUNNING],
        "answer": "SPOKEN",
        "v1": {"initialize": V1_INIT, "prompt_reply": None, "prompt": [], **v1},
    }


def test_a_v2_session_setup_that_does_not_validate_restarts_the_agent_once_on_v1(
    spy: Spy,
) -> None:
    result = spy.harness.run("spy", "go", spy.config(malformed_for_v2(), protocol="auto"))
    assert (result.status, result.output) == ("done", "SPOKEN"), result.error
    assert result.meta.protocol_version == 1
    assert result.meta.config_options == {"effort": "high"}
    assert warned(result, "restarted on ACP v1")
    assert warned(result, "configOptions.0.configId")
    assert initialize_versions(spy) == [2, 1]
    assert spy.methods().count("session/new") == 2
    assert spy.methods().count("session/prompt") == 1  # nothing ran twice
    transcript = Path(result.meta.transcript or "").read_text()
    assert "restarting the agent on ACP v1" in transcript
    # The first agent was ended before the second started (the note says how it ended).
    assert "the agent (v2) is still running" not in transcript


def test_the_restart_on_v1_happens_once(spy: Spy) -> None:
    broken = {"configOptions": [{"name": "no id in either version"}]}
    script = malformed_for_v2(session=broken)
    script["session"] = broken
    result = spy.harness.run("spy", "go", spy.config(script, protocol="auto"))
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert "malformed reply to session/new: configOptions.0.id" in result.error
    assert initialize_versions(spy) == [2, 1]
    assert "session/prompt" not in spy.methods()


def test_under_protocol_2_a_malformed_v2_reply_stays_an_error(spy: Spy) -> None:
    result = spy.harness.run("spy", "go", spy.config(malformed_for_v2(), protocol="2"))
    assert result.meta.error_code == ErrorCode.PROTOCOL_ERROR
    assert "configOptions.0.configId" in result.error
    assert initialize_versions(spy) == [2]
