"""Shapes and types at the boundary, nested too (issue 37, class 9): one check for every
model that reads outside input — the config's, the agent's wire shapes, the MCP tools'
and the local loop's arguments — and a boolean is never a number in any of them."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from acp_bridge._acp.turn.turn_collector import TurnCollector
from acp_bridge._acp.wire.schema import ConfigOption, SessionSetup
from acp_bridge._records.numbers import NumbersNotBooleans, number_not_boolean
from acp_bridge.events import EventSink

BOUNDARY = [
    "acp_bridge._acp.wire.schema",
    "acp_bridge._acp.wire.initialize_schema",
    "acp_bridge._acp.wire.session_schema",
    "acp_bridge._acp.services.elicitation",
    "acp_bridge._mcp.arguments",
    "acp_bridge._entries.local_loop.workspace_tools",
    *(
        f"acp_bridge.config.{name}"
        for name in ("_fields", "_package", "_profile", "_sandbox_section", "_settings")
    ),
    "acp_bridge.smoke._suite",
]
"""The modules whose models read what comes from outside (a file, an agent, a caller)."""

INTERNAL = {"ResolvedSandbox"}
"""Models built by the bridge itself from checked input, never from outside input."""


def _models() -> list[type[BaseModel]]:
    found = []
    for name in BOUNDARY:
        module = importlib.import_module(name)
        found += [
            model
            for model in vars(module).values()
            if inspect.isclass(model)
            and issubclass(model, BaseModel)
            and model.__module__ == name
            and model.__name__ not in INTERNAL
        ]
    return found


MODELS = _models()
NUMBER_FIELDS = sorted(
    (model.__module__, model.__name__, name, field.alias or name)
    for model in MODELS
    for name, field in model.model_fields.items()
    if number_not_boolean(field.annotation)
)


def test_every_boundary_model_shares_the_one_check() -> None:
    assert len(MODELS) > 60
    assert [m.__name__ for m in MODELS if not issubclass(m, NumbersNotBooleans)] == []


@pytest.mark.parametrize(("module", "model", "name", "alias"), NUMBER_FIELDS)
@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_for_a_number_is_refused_at_its_field(
    module: str, model: str, name: str, alias: str, value: bool
) -> None:
    with pytest.raises(ValidationError) as caught:
        getattr(importlib.import_module(module), model).model_validate({alias: value})
    mine = [e for e in caught.value.errors() if e["loc"] and e["loc"][0] in (name, alias)]
    assert mine and f"must be a number, got {str(value).lower()}" in mine[0]["msg"]


NESTED = [
    [{"group": "g", "name": "G", "options": 5}],  # the case
    [{"group": "g", "name": "G", "options": "abc"}],
    [{"group": "g", "name": "G", "options": {"value": "a"}}],
    [{"group": "g", "name": "G", "options": [5]}],
    [{"group": "g", "name": "G", "options": [{"value": True}]}],
    [{"group": "g", "name": "G", "options": [{"name": "no value"}]}],
    [{"group": 3, "options": []}],
    [{"value": True}],
    [{"value": {"nested": "object"}}],
    [7],
    ["plain"],
    [None],
]


@pytest.mark.parametrize("options", NESTED)
def test_a_config_options_nested_members_are_checked_where_they_are_read(
    options: list[Any],
) -> None:
    option = {"id": "style", "name": "Style", "type": "select", "options": options}
    with pytest.raises(ValidationError):
        ConfigOption.model_validate(option)
    with pytest.raises(ValidationError):  # in a session setup reply: refused as a whole
        SessionSetup.model_validate({"configOptions": [option]})
    collector = TurnCollector(EventSink(None))
    collector.session_known("s")
    collector.begin_turn()
    update = {"sessionUpdate": "config_option_update", "configOptions": [option]}
    collector({"sessionId": "s", "update": update})  # skipped and counted, never raised
    assert collector.malformed == 1


def test_groups_and_plain_options_give_every_value() -> None:
    option = ConfigOption.model_validate(
        {
            "id": "model",
            "options": [
                {"value": "fast", "name": "Fast"},
                {"group": "big", "name": "Big", "options": [{"value": "large"}, {"value": 2}]},
            ],
        }
    )
    assert option.allowed_values() == ["fast", "large", "2"]
