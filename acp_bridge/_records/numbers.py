"""A boolean is never a number: the one check every boundary model shares.

pydantic reads ``true`` as ``1`` for an ``int`` or ``float`` field (``timeouts.stall: true``
was one second; a file read's ``line: true`` was line 1). Every model that reads outside
input — the config's (``config/_fields.py``: ``StrictModel``) and the agent's
(``_acp/wire/schema.py``: ``Wire``), nested members included, since each nested shape is a
model of its own — inherits :class:`NumbersNotBooleans`: a field that takes a number and no
boolean refuses one, at its own location (the config's errors then carry its file:line).
"""

import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, ValidationInfo, field_validator


def number_not_boolean(annotation: Any) -> bool:
    """Whether a field of this type takes a number (int or float) and no boolean."""
    if typing.get_origin(annotation) is Annotated:
        return number_not_boolean(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        return bool not in members and any(number_not_boolean(m) for m in members)
    return annotation in (int, float)


class NumbersNotBooleans(BaseModel):
    """A model whose number fields refuse a boolean."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        # Looked at only when the value is a boolean: the common case costs one type check.
        if value.__class__ is bool and info.field_name is not None:
            field = cls.model_fields.get(info.field_name)
            if field is not None and number_not_boolean(field.annotation):
                raise ValueError(f"must be a number, got {str(value).lower()}")
        return value
