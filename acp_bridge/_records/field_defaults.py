"""Default factories for pydantic fields, in the form pydantic reads fastest.

Building a model, pydantic asks each ``default_factory`` for its signature (does it take the
validated data?). For ``list`` or ``dict`` that parses their text signature; for a model
class it builds the class's signature; for a plain function it reads the function's code:
a cold ``acp-bridge run`` builds ~30 such fields. The values are the same, a fresh one each
time.
"""

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def empty_list() -> list[Any]:
    return []


def empty_dict() -> dict[Any, Any]:
    return {}


def instance_of(model: Callable[[], T]) -> Callable[[], T]:
    """A factory of ``model()`` (a model with every field at its default)."""

    def instance() -> T:
        return model()

    return instance
