"""Immutable records with the equality, hash and repr of a frozen dataclass, without one:
the questions and answers a host hook sees, and the OS layer's records.

A dataclass compiles its methods from source text when its module loads (~3 M instructions
each for a frozen one, on every command's start); these methods are written once, here.
A subclass lists its fields in ``__slots__`` and ``_compared`` (those that count for ``==``,
the hash and the repr, in order) and sets them in ``__init__`` with ``object.__setattr__``.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, ClassVar, Self


class FrozenRecord:
    __slots__ = ()
    _compared: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._compared)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    # pickle and copy set the fields back one by one: past __setattr__, which refuses (a
    # frozen dataclass does the same).
    def __getstate__(self) -> dict[str, Any]:
        names = (name for cls in type(self).__mro__ for name in getattr(cls, "__slots__", ()))
        return {name: getattr(self, name) for name in names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def replaced(self, **changes: Any) -> Self:
        """A new record with ``changes`` (what ``dataclasses.replace`` gives): made by the
        class's own ``__init__``, whose parameters are named as its fields."""
        return type(self)(**{**self.__getstate__(), **changes})

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._compared)
        return f"{type(self).__qualname__}({shown})"
