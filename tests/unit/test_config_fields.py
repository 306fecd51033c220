"""A boolean is never a number, in any config model: every field that takes a number and no
boolean refuses ``true`` / ``false`` at its own line (pydantic alone reads ``true`` as 1)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

import acp_bridge.config  # noqa: F401 - defines every config model
from acp_bridge._records.numbers import number_not_boolean
from acp_bridge.config._fields import StrictModel


def _models(base: type[StrictModel] = StrictModel) -> list[type[StrictModel]]:
    found = []
    for sub in base.__subclasses__():
        found += [sub, *_models(sub)]
    return found


NUMBER_FIELDS = sorted(
    {
        (model.__name__, name)
        for model in _models()
        for name, field in model.model_fields.items()
        if number_not_boolean(field.annotation)
    }
)
MODELS = {model.__name__: model for model in _models()}


def test_the_config_has_many_number_fields() -> None:
    assert len(NUMBER_FIELDS) > 20  # timeouts, limits, budgets, retention…


@pytest.mark.parametrize(("model", "name"), NUMBER_FIELDS)
@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_for_a_number_is_refused(model: str, name: str, value: bool) -> None:
    with pytest.raises(ValidationError) as caught:
        MODELS[model].model_validate({name: value})
    mine: list[dict[str, Any]] = [e for e in caught.value.errors() if e["loc"] == (name,)]
    assert mine and f"must be a number, got {str(value).lower()}" in mine[0]["msg"]


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [(int, True), (float, True), (int | None, True), (bool, False), (str, False),
     (str | bool | int | float, False), (bool | None, False)],
)  # fmt: skip
def test_which_types_take_a_number(annotation: Any, expected: bool) -> None:
    assert number_not_boolean(annotation) is expected
