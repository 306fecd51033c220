"""Live events of a run, and the observe profiles that choose which ones a caller sees.

Every entry path reports progress as :class:`Event` objects to an optional ``on_event``
callable (the CLI prints them on stderr). An observe profile is a named filter:

- ``default``: phases, agent messages, tool calls, permission decisions, plans, terminals,
  usage, warnings, the agent's notices, context compactions and child sessions;
- ``long_shell``: ``default`` plus live terminal / command output;
- ``web_extract``: phases, messages, permissions, warnings, and only the tool calls that
  fetch, search or read;
- ``verbose``: every kind there is, the worker's visible reasoning (``thought``) and the
  lines it writes on stderr (``stderr``) included.

``on_event`` is called synchronously on the event loop: it must be quick and must not block.
When nobody listens, or the profile filters a kind out, no event object is built at all
(the message stream is the hot path).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

EventKind = Literal[
    "status",  # a phase began or ended: starting, initialized, session, prompting, done …
    "message",  # a chunk of the worker's answer
    "thought",  # a chunk of the worker's visible reasoning
    "tool_call",  # the worker started a tool call
    "tool_update",  # a tool call changed status
    "permission",  # a permission decision was made
    "plan",  # the worker's plan, in full
    "terminal",  # a terminal / command started or exited
    "terminal_output",  # output of a terminal / command, as it comes
    "stderr",  # a line the worker process wrote on stderr
    "usage",  # token / context / cost figures
    "warning",  # something odd the run survived
    "notice",  # information the agent gives the user beside its answer (ACP notices)
    "compaction",  # the agent compacted its context
    "subagent",  # a child session of the agent: announced, its state, usage, messages
]
"""What an :class:`Event` reports (each kind's meaning is beside it)."""

ObserveProfile = Literal["default", "long_shell", "web_extract", "verbose"]
"""Which event kinds a run reports: ``default``, ``long_shell`` (plus command output),
``web_extract`` (the answer, and only the tool calls that fetch, search or read),
``verbose`` (every kind); the module docstring lists each one's kinds."""

_DEFAULT: frozenset[str] = frozenset(
    {
        "status",
        "message",
        "tool_call",
        "tool_update",
        "permission",
        "plan",
        "terminal",
        "usage",
        "warning",
        "notice",
        "compaction",
        "subagent",
    }
)
PROFILES: dict[str, frozenset[str]] = {
    "default": _DEFAULT,
    "long_shell": _DEFAULT | {"terminal_output"},
    "web_extract": frozenset(
        {"status", "message", "tool_call", "tool_update", "permission", "warning"}
    ),
    "verbose": _DEFAULT | {"terminal_output", "thought", "stderr"},
}
_WEB_TOOL_KINDS = frozenset({"fetch", "search", "read"})


@dataclass(frozen=True)
class Event:
    """One thing that happened during a run."""

    kind: EventKind
    task_id: str
    elapsed: float
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "task_id": self.task_id,
            "elapsed": round(self.elapsed, 3),
            **self.data,
        }


EventHandler = Callable[[Event], None]
"""A run's ``on_event`` callback: called with each reported event, as it happens."""


class EventSink:
    """Filters and delivers the events of one run to one handler (or to nobody)."""

    def __init__(
        self,
        handler: EventHandler | None,
        profile: str | None = None,
        *,
        task_id: str = "",
        started: float | None = None,
    ) -> None:
        name = profile or "default"
        if name not in PROFILES:
            from acp_bridge.errors import ConfigError

            raise ConfigError(
                f"unknown observe_profile {name!r}; allowed: {', '.join(sorted(PROFILES))}"
            )
        self.profile = name
        self.task_id = task_id
        self._handler = handler
        self._kinds = PROFILES[name] if handler is not None else frozenset()
        self._started = time.monotonic() if started is None else started
        self.redact: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        """Hides the run's secrets in every event's data (the run's redaction policy)."""

    def retarget(self, task_id: str, started: float) -> None:
        """Report later events as another run's: a follow-up turn in the same session, which
        is a run of its own (``started``: its ``time.monotonic()`` start)."""
        self.task_id, self._started = task_id, started

    def wants(self, kind: EventKind) -> bool:
        """Cheap check for hot paths: build the event only if this is true."""
        return kind in self._kinds

    def emit(self, kind: EventKind, **data: Any) -> None:
        if kind not in self._kinds or self._handler is None:
            return
        if (
            self.profile == "web_extract"
            and kind in ("tool_call", "tool_update")
            and data.get("tool_kind") not in _WEB_TOOL_KINDS
        ):
            return
        if self.redact is not None:
            data = self.redact(data)
        self._handler(Event(kind, self.task_id, time.monotonic() - self._started, data))
