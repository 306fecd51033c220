"""Choosing the model of a run, and building it from the config."""

from __future__ import annotations

import pytest
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel

from acp_bridge._loop.models import NO_KEY, build_model, choose_model
from acp_bridge.config import Config
from acp_bridge.errors import ConfigError


def models(data: dict[str, object]) -> Config:
    return Config.model_validate({"models": data})


LOCAL = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}


def test_no_models_means_passthrough_with_a_warning() -> None:
    choice = choose_model(Config().models, None)
    assert choice.name == "passthrough" and choice.entry is None
    assert "no model configured" in choice.warnings[0]
    assert choose_model(Config().models, "passthrough").warnings == ()
    explicit = models({"default": "passthrough"}).models
    assert choose_model(explicit, None).warnings == ()


def test_an_unknown_model_is_refused_naming_the_known_ones() -> None:
    config = models({"default": "local", "entries": {"local": LOCAL}}).models
    assert choose_model(config, "local").warnings == ()
    with pytest.raises(ConfigError, match=r"unknown model 'gpt-9'; .*: passthrough, local"):
        choose_model(config, "gpt-9")


def test_build_model_kinds_and_keys() -> None:
    config = models(
        {
            "entries": {
                "local": LOCAL,
                "keyed": {**LOCAL, "api_key_env": "MY_KEY", "temperature": 0},
                "openai": {**LOCAL, "provider": "openai", "api_key": "sk-x"},
            }
        }
    ).models
    assert isinstance(build_model(choose_model(config, "passthrough")), FunctionModel)
    local = build_model(choose_model(config, "local"), environ={"OPENAI_API_KEY": "leak"})
    assert isinstance(local, OpenAIChatModel)
    assert local.client.api_key == NO_KEY  # never the host's OpenAI key
    assert local.base_url.rstrip("/") == "http://127.0.0.1:9/v1"
    keyed = build_model(choose_model(config, "keyed"), environ={"MY_KEY": "secret"})
    assert isinstance(keyed, OpenAIChatModel) and keyed.client.api_key == "secret"
    with pytest.raises(ConfigError, match="MY_KEY is not set"):
        build_model(choose_model(config, "keyed"), environ={})
    openai = build_model(choose_model(config, "openai"))
    assert isinstance(openai, OpenAIChatModel) and openai.client.api_key == "sk-x"
