"""Default factories of model fields (_records/field_defaults.py): the same values as ``list``,
``dict`` or the model class gave, a fresh one for each instance, and none that pydantic
takes for a factory of the validated data."""

from typing import Any

from pydantic import BaseModel
from pydantic._internal._fields import takes_validated_data_argument

from acp_bridge._acp.wire.initialize_schema import InitializeResult
from acp_bridge.config import AgentProfile, Config
from acp_bridge.envelope import SubtaskResult


def _factories(model: type[BaseModel]) -> dict[str, Any]:
    return {
        name: field.default_factory
        for name, field in model.model_fields.items()
        if field.default_factory is not None
    }


def test_the_defaults_are_fresh_and_the_same_as_before() -> None:
    first = AgentProfile(name="a", command="true")
    second = AgentProfile(name="b", command="true")
    assert first.args == [] and first.env == {}
    assert first.args is not second.args and first.env is not second.env
    assert first.timeouts == type(first.timeouts)()
    assert first.timeouts is not second.timeouts
    assert Config().runs.retention.days == 30
    assert SubtaskResult.model_fields["meta"].default_factory is not None


def test_no_factory_takes_the_validated_data() -> None:
    for model in (AgentProfile, Config, SubtaskResult, InitializeResult):
        for name, factory in _factories(model).items():
            assert not takes_validated_data_argument(factory), (model.__name__, name)
            assert factory() == factory() and factory() is not factory(), (model.__name__, name)
