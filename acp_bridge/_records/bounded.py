"""Tables and lists with a cap, for what the bridge keeps of what an agent sends.

Everything the bridge keeps of an agent's stream and requests is bounded: child sessions,
tool calls, plans, compactions, file changes, permission decisions, elicitations, terminals.
A bound alone is not enough. A table that is full, or given a key longer than any agent
uses, must never *fall through*: keep the entry under a cut key (two long ids with the same
head would then be one entry), or leave a caller that finds nothing to take the update as
someone else's (a child session's message as its parent's answer). So one rule for all of
them, kept here: what does not fit is dropped whole and counted, never stored under another
key; a caller that gets None from :meth:`BoundedTable.add` drops the update, since nothing
else owns it; and the counts are said in ``meta.warnings`` (:meth:`BoundedTable.warning`).

Both are the builtin types underneath (reads are the builtin's, on hot paths); only what adds
to them goes through :meth:`BoundedTable.add` / :meth:`BoundedTable.put` and
:meth:`BoundedList.add`, which hold the cap.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")

MAX_KEY_CHARS = 256
"""Longest id kept as a key by default: ids are names, not payloads."""


def key_fits(key: object, max_chars: int) -> bool:
    """Whether ``key`` is short enough: a string of at most ``max_chars`` characters, or a
    tuple whose strings all are."""
    if type(key) is str:
        return len(key) <= max_chars
    if type(key) is tuple:
        return all(len(part) <= max_chars for part in key if type(part) is str)
    return True


class BoundedTable(dict[K, V]):
    """A dict of at most ``cap`` entries whose string keys are at most ``key_chars`` long.

    ``what`` names the entries in warnings (``"child sessions"``, ``"tool calls"``)."""

    __slots__ = ("cap", "full", "key_chars", "oversize", "what")

    def __init__(self, what: str, cap: int, key_chars: int = MAX_KEY_CHARS) -> None:
        super().__init__()
        self.what = what
        self.cap = cap
        self.key_chars = key_chars
        self.full = 0
        """Additions refused because the table was full (each attempt counts)."""
        self.oversize = 0
        """Additions refused because the key was too long (each attempt counts)."""

    def admits(self, key: K) -> bool:
        """Whether ``key`` is in the table or may be added now; a refusal is counted."""
        if key in self:
            return True
        if not key_fits(key, self.key_chars):
            self.oversize += 1
            return False
        if len(self) >= self.cap:
            self.full += 1
            return False
        return True

    def add(self, key: K, make: Callable[[], V]) -> V | None:
        """The entry of ``key``: the one kept, or a new one from ``make()`` when there is
        room; None (counted) when the table is full or the key too long — the caller then
        drops what it was about to record."""
        value = self.get(key)
        if value is not None or key in self:
            return value
        if not self.admits(key):
            return None
        value = self[key] = make()
        return value

    def put(self, key: K, value: V) -> bool:
        """Set ``key`` to ``value`` (replacing its entry, or adding one when there is room);
        whether it was kept."""
        if not self.admits(key):
            return False
        self[key] = value
        return True

    def find(self, key: object) -> V | None:
        """The entry of ``key``, for a key as the agent sent it (a list, an object, a number:
        none)."""
        if isinstance(key, Hashable):
            try:
                return self.get(key)  # type: ignore[arg-type]
            except TypeError:  # a tuple holding a list
                return None
        return None

    def dropped(self) -> int:
        return self.full + self.oversize

    def reset(self) -> None:
        """Empty, its counts too (a new turn counts its own)."""
        self.clear()
        self.full = self.oversize = 0

    def warning(self) -> str | None:
        """What was dropped, in plain words; None when nothing was."""
        parts = []
        if self.full:
            parts.append(
                f"kept the first {self.cap}, dropped {self.full} update(s) of more of them"
            )
        if self.oversize:
            parts.append(
                f"dropped {self.oversize} update(s) naming one by an id longer than "
                f"{self.key_chars} characters"
            )
        return f"{self.what}: {'; '.join(parts)}" if parts else None


class BoundedList(list[T]):
    """A list of at most ``cap`` items, added with :meth:`add`; the rest counted."""

    __slots__ = ("cap", "full", "what")

    def __init__(self, what: str, cap: int) -> None:
        super().__init__()
        self.what = what
        self.cap = cap
        self.full = 0

    def add(self, item: T) -> bool:
        """Append ``item`` when there is room; whether it was kept."""
        if len(self) >= self.cap:
            self.full += 1
            return False
        self.append(item)
        return True

    def reset(self) -> None:
        self.clear()
        self.full = 0

    def warning(self) -> str | None:
        if not self.full:
            return None
        return f"{self.what}: kept the first {self.cap}, {self.full} more not kept"
