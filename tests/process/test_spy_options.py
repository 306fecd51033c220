"""Mode, model and config options (profile: warnings; per call: errors), the older model
list with session/set_model, and every stable session/update kind in the envelope — checked
with the spy agent."""

from __future__ import annotations

from typing import Any

from acp_bridge.errors import ErrorCode
from tests.spy import Spy

MODES = {
    "currentModeId": "ask",
    "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}],
}
OLD_MODELS = {
    "currentModelId": "small",
    "availableModels": [
        {"modelId": "small", "name": "Small"},
        {"modelId": "large", "name": "Large", "description": "slow"},
    ],
}
MODEL_OPTION = {
    "id": "model",
    "name": "Model",
    "category": "model",
    "type": "select",
    "currentValue": "fast",
    "options": [{"value": "fast", "name": "Fast"}, {"value": "deep", "name": "Deep"}],
}
BOOLEAN_OPTION = {"id": "brave", "name": "Brave", "type": "boolean", "currentValue": False}


def _sent(spy: Spy, method: str) -> list[dict[str, Any]]:
    return [m["params"] for m in spy.received() if m.get("method") == method]


def test_model_from_the_older_models_list_uses_set_model(spy: Spy) -> None:
    config = spy.config({"session": {"models": OLD_MODELS}})
    result = spy.harness.run("spy", "hi", config, model="large")
    assert result.status == "done", result.error
    assert spy.methods() == ["initialize", "session/new", "session/set_model", "session/prompt"]
    assert _sent(spy, "session/set_model") == [{"sessionId": "spy-session-1", "modelId": "large"}]
    assert result.meta.model == "large"


def test_a_model_config_option_wins_over_the_models_list(spy: Spy) -> None:
    config = spy.config({"session": {"models": OLD_MODELS, "configOptions": [MODEL_OPTION]}})
    result = spy.harness.run("spy", "hi", config, model="deep")
    assert result.status == "done", result.error
    assert "session/set_model" not in spy.methods()
    assert _sent(spy, "session/set_config_option") == [
        {"sessionId": "spy-session-1", "configId": "model", "value": "deep"}
    ]
    assert result.meta.model == "deep"
    assert result.meta.config_options == {"model": "deep"}


def test_an_unknown_model_per_call_is_an_error_listing_the_offered_ones(spy: Spy) -> None:
    config = spy.config({"session": {"models": OLD_MODELS}})
    result = spy.harness.run("spy", "hi", config, model="huge")
    assert result.status == "failed"
    assert result.meta.error_code == ErrorCode.CONFIG_ERROR
    assert result.error == "--model: model 'huge' is not offered (offered: small, large)"
    assert "session/prompt" not in spy.methods()


def test_the_same_value_from_the_profile_is_only_a_warning(spy: Spy) -> None:
    config = spy.config(
        {"session": {"models": OLD_MODELS, "modes": MODES}},
        session={"model": "huge", "mode": "yolo", "config_options": {"nope": 1}},
    )
    result = spy.harness.run("spy", "hi", config)
    assert result.status == "done", result.error
    assert result.meta.warnings == [
        "session.mode: mode 'yolo' is not offered (offered: ask, code); left as it is",
        "session.model: model 'huge' is not offered (offered: small, large); left as it is",
        "session.config_options.nope: config option 'nope' is not offered (offered: none); "
        "left as it is",
    ]
    assert spy.methods() == ["initialize", "session/new", "session/prompt"]


def test_a_per_call_value_replaces_the_profiles(spy: Spy) -> None:
    config = spy.config({"session": {"modes": MODES}}, session={"mode": "nonsense"})
    result = spy.harness.run("spy", "hi", config, mode="code")
    assert result.status == "done", result.error
    assert _sent(spy, "session/set_mode") == [{"sessionId": "spy-session-1", "modeId": "code"}]
    assert result.meta.mode == "code" and not result.meta.warnings


def test_an_unknown_mode_per_call_is_an_error(spy: Spy) -> None:
    config = spy.config({"session": {"modes": MODES}})
    result = spy.harness.run("spy", "hi", config, mode="yolo")
    assert result.error == "--mode: mode 'yolo' is not offered (offered: ask, code)"
    assert "session/set_mode" not in spy.methods()


def test_boolean_options_are_advertised_and_set_as_booleans(spy: Spy) -> None:
    config = spy.config({"session": {"configOptions": [BOOLEAN_OPTION]}})
    result = spy.harness.run("spy", "hi", config, config_options={"brave": "true"})
    assert result.status == "done", result.error
    caps = spy.request("initialize")["params"]["clientCapabilities"]
    assert caps["session"] == {
        "configOptions": {"boolean": {}},
        "notices": {},
        "compaction": {},
    }
    assert _sent(spy, "session/set_config_option") == [
        {"sessionId": "spy-session-1", "configId": "brave", "value": True, "type": "boolean"}
    ]
    assert result.meta.config_options == {"brave": True}

    bad = spy.harness.run("spy", "hi", config, config_options={"brave": "maybe"})
    assert bad.error == "--set brave: brave wants true or false, got 'maybe'"


def test_an_unknown_option_per_call_lists_the_offered_ones(spy: Spy) -> None:
    config = spy.config({"session": {"configOptions": [BOOLEAN_OPTION, MODEL_OPTION]}})
    result = spy.harness.run("spy", "hi", config, config_options={"speed": "max"})
    assert (
        result.error == "--set speed: config option 'speed' is not offered (offered: brave, model)"
    )


def test_every_stable_update_kind_reaches_the_envelope(spy: Spy) -> None:
    plan = [{"content": "read", "priority": "high", "status": "in_progress"}]
    cost = {"amount": 0.5, "currency": "USD"}
    updates: list[dict[str, Any]] = [
        {"sessionUpdate": "plan", "entries": plan},
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "init", "description": "set up"}],
        },
        {"sessionUpdate": "current_mode_update", "currentModeId": "code"},
        {
            "sessionUpdate": "config_option_update",
            "configOptions": [{**MODEL_OPTION, "currentValue": "deep"}],
        },
        {"sessionUpdate": "session_info_update", "title": "Spying", "updatedAt": "2026-11-23"},
        {"sessionUpdate": "usage_update", "used": 1200, "size": 200000, "cost": cost},
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}},
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}},
        {"sessionUpdate": "from_the_future", "x": 1},
    ]
    prompt = [*({"update": u} for u in updates), {"say": "THE ANSWER", "messageId": "msg-7"}]
    config = spy.config({"session": {"modes": MODES}, "prompt": prompt, "answer": ""})
    result = spy.harness.run("spy", "hi", config)
    assert result.status == "done", result.error
    meta = result.meta
    assert result.output == "THE ANSWER" and meta.message_id == "msg-7"
    assert meta.plan == plan
    assert meta.available_commands == ["init"]
    assert meta.mode == "code"
    assert meta.model == "deep" and meta.config_options == {"model": "deep"}
    assert meta.session_title == "Spying"
    assert meta.usage == {"context_used": 1200, "context_size": 200000, "cost": cost}
    assert meta.unknown_updates == {"from_the_future": 1}
    assert meta.warnings == ["ignored unknown session/update kinds: from_the_future"]
