"""A permission request and the file or terminal request it leads to are one decision.

An agent asks "may I run tool call 7, titled ``run echo hello``, ``rawInput.command: echo
hello``?", then calls ``terminal/create`` with ``echo hello``. Judged twice, the two can get
different answers (a title rule matches one and not the other) and a host can be asked twice.
So every decided permission request leaves a :class:`Decision` keyed by what it is about,
and a served request with the same key is decided by it:

- a command: the parsed command (its words when it is one simple command, else the whole
  line), and — for agents that name the command only in the title — the title's words, and
  the title's words after its first (``run echo hello`` → ``echo hello``);
- a path: the absolute path of each location, with the access: reading (``read``, ``search``)
  or changing (every other kind). A permitted read never covers a write.

An allowing decision covers one served request per key (then that key is spent); a refusing
one keeps refusing the same command or path for the rest of the session. The newest
decision wins, and only the last :data:`MAX_DECISIONS` are kept.
"""

from __future__ import annotations

import os
from collections import deque

from acp_bridge._os.cmdline import Command, parse_line

MAX_DECISIONS = 256
READING_KINDS = frozenset({"read", "search"})

Key = tuple[str, ...]


def command_keys(command: Command | None, title: str = "") -> set[Key]:
    """The keys of a command (and of a title that may name it)."""
    keys: set[Key] = set()
    if command is not None and command.parts:
        keys.add(("command", *command.key))
    if title:
        named = parse_line(title)
        if named.simple:
            keys.add(("command", *named.words))
            if len(named.words) > 1:
                keys.add(("command", *named.words[1:]))
    return keys


def path_keys(kind: str, paths: tuple[str, ...]) -> set[Key]:
    """The keys of the paths a tool call or a served request reads or changes."""
    access = "read" if kind in READING_KINDS else "change"
    return {(access, os.path.normpath(path)) for path in paths if path}


class Decision:
    """One decided permission request, by what it was about."""

    # Plain classes, not dataclasses: those compile their methods as every command starts.
    __slots__ = ("allowed", "keys", "reason", "tool_call_id")

    def __init__(self, keys: set[Key], allowed: bool, reason: str, tool_call_id: str) -> None:
        self.keys = keys
        self.allowed = allowed
        self.reason = reason
        self.tool_call_id = tool_call_id

    def _values(self) -> tuple[set[Key], bool, str, str]:
        return self.keys, self.allowed, self.reason, self.tool_call_id

    def __eq__(self, other: object) -> bool:  # by value: ``kept.remove`` goes by it
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value


class Decisions:
    """The decided permission requests of one session, newest last."""

    __slots__ = ("kept",)

    def __init__(self, kept: deque[Decision] | None = None) -> None:
        self.kept: deque[Decision] = deque(maxlen=MAX_DECISIONS) if kept is None else kept

    def remember(self, keys: set[Key], allowed: bool, reason: str, tool_call_id: str) -> None:
        if keys:
            self.kept.append(Decision(set(keys), allowed, reason, tool_call_id))

    def decide(self, keys: set[Key]) -> tuple[bool, str] | None:
        """(allowed?, reason) from the newest decision about any of ``keys``, or None."""
        for decision in reversed(self.kept):
            shared = decision.keys & keys
            if not shared:
                continue
            if decision.allowed:  # one served request per key
                decision.keys -= shared
                if not decision.keys:
                    self.kept.remove(decision)
            verdict = "allowed" if decision.allowed else "refused"
            reason = (
                f"{verdict} with the permission request of tool call "
                f"{decision.tool_call_id or '(unnamed)'} ({decision.reason})"
            )
            return decision.allowed, reason
        return None
