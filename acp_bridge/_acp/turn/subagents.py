"""Child sessions an agent runs (v1 subagent sessions, unstable; opt-in by the client's
``subagents`` capability), followed as nested ``subagent`` events and ``meta.subagents``.

The agent announces a child with ``subagent_update`` (its session id; title, description,
cancel capability and work state as upserts: missing = unchanged, null clears). The child's
own updates arrive as ``session/update`` for the child's session id; messages between
sessions as ``session_message`` / ``session_message_chunk`` in the parent. None of that is
the parent turn's answer, tool calls or plan. What a child reports of its usage (the
``usage`` of its idle state, its ``usage_update``s) is counted into the parent run's usage
as ``subagent_tokens``, so ``max_tokens`` and group budgets count the children too. When
the turn is stopped, children whose cancel capability is advertised are cancelled first
(:meth:`Subagents.cancellable`).

Which session an update belongs to is decided by its ``sessionId`` alone (the turn collector:
the parent's own id, else a child's): a child is kept under its whole id, and a child that
does not fit — past :data:`MAX_CHILDREN` children, or an id longer than :data:`MAX_ID_CHARS`
— is dropped and counted (``meta.warnings``), and so are its updates: they are never the
parent's (``_records/bounded.py``). Titles are cut to :data:`TEXT_CHARS`.
"""

from __future__ import annotations

import math
from typing import Any

from acp_bridge._records.bounded import BoundedTable
from acp_bridge.events import EventSink

MAX_CHILDREN = 256
MAX_ID_CHARS = 256
"""Longest child session id followed (ids are names, not payloads)."""
MAX_MESSAGES = MAX_CHILDREN * 64
"""``session_message`` ids remembered (a message is counted once, however often upserted)."""
TEXT_CHARS = 1000


def _tokens(value: object) -> int | None:
    ok = type(value) in (int, float) and math.isfinite(value) and value >= 0  # type: ignore[arg-type,operator]
    return int(value) if ok else None  # type: ignore[call-overload]


class Child:
    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = (
        "can_cancel", "context_used", "messages", "session_id", "status", "stop_reason",
        "title", "total_tokens", "updates",
    )  # fmt: skip

    def __init__(
        self,
        session_id: str,
        title: str | None = None,
        status: str = "unknown",
        stop_reason: str | None = None,
        can_cancel: bool = False,
        total_tokens: int = 0,
        context_used: int = 0,
        messages: int = 0,
        updates: dict[str, int] | None = None,
    ) -> None:
        self.session_id = session_id
        self.title = title
        self.status = status
        self.stop_reason = stop_reason
        self.can_cancel = can_cancel
        self.total_tokens = total_tokens
        self.context_used = context_used
        self.messages = messages  # between it and its parent (``session_message``)
        self.updates: dict[str, int] = {} if updates is None else updates

    def tokens(self) -> int:
        return max(self.total_tokens, self.context_used)

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.session_id, "status": self.status}
        if self.title:
            out["title"] = self.title
        if self.stop_reason:
            out["stop_reason"] = self.stop_reason
        if self.tokens():
            out["usage"] = {"total_tokens": self.tokens()}
        if self.messages:
            out["messages"] = self.messages
        return out


class Subagents:
    """The children of one session."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self.children: BoundedTable[str, Child] = BoundedTable(
            "child sessions", MAX_CHILDREN, MAX_ID_CHARS
        )
        self._messages: BoundedTable[str, bool] = BoundedTable(
            "messages between sessions", MAX_MESSAGES, MAX_ID_CHARS
        )
        self.foreign = 0
        """Updates of a session that is neither the parent nor a child followed (unknown,
        or dropped): never the parent's, counted here."""

    def announce(self, update: dict[str, Any]) -> None:
        """A ``subagent_update`` in the parent session."""
        session_id = update.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise TypeError("subagent_update needs a sessionId")
        child = self.children.add(session_id, lambda: Child(session_id))
        if child is None:  # past the cap, or an id too long: dropped, counted
            return
        if "title" in update:
            title = update["title"]
            child.title = title[:TEXT_CHARS] if isinstance(title, str) else None
        if "capabilities" in update:
            caps = update["capabilities"]
            child.can_cancel = isinstance(caps, dict) and isinstance(caps.get("cancel"), dict)
        if "state" in update:
            self._state(child, update["state"])
        self._emit(child, "announced")

    def _state(self, child: Child, state: Any) -> None:
        if not isinstance(state, dict) or not isinstance(state.get("state"), str):
            child.status = "unknown"
            return
        child.status = state["state"][:64]
        if child.status == "idle":
            stop = state.get("stopReason")
            child.stop_reason = stop[:64] if isinstance(stop, str) else None
            usage = state.get("usage")
            if isinstance(usage, dict):
                total = _tokens(usage.get("totalTokens"))
                if total is None:
                    parts = [_tokens(usage.get(k)) for k in ("inputTokens", "outputTokens")]
                    total = sum(p for p in parts if p is not None)
                child.total_tokens = max(child.total_tokens, total)

    def child_update(self, child: Child, update: dict[str, Any]) -> None:
        """An update of a child's own session: counted, and what it says of usage kept."""
        kind = update.get("sessionUpdate")
        kind = kind[:64] if isinstance(kind, str) else "?"
        if kind in child.updates or len(child.updates) < 32:
            child.updates[kind] = child.updates.get(kind, 0) + 1
        if kind == "usage_update":
            used = _tokens(update.get("used"))
            if used is not None:
                child.context_used = max(child.context_used, used)
            self._emit(child, "usage")
        elif kind == "state_update":
            self._state(child, update)
            self._emit(child, "state")

    def message(self, update: dict[str, Any]) -> None:
        """A ``session_message`` in the parent: a message to or from a child (its chunks
        carry only content, so they are counted with the other update kinds)."""
        message_id = update.get("messageId")
        if not isinstance(message_id, str) or message_id in self._messages:
            return
        for key in ("senderSessionId", "recipientSessionId"):
            child = self.children.find(update.get(key))
            if child is not None:
                if not self._messages.put(message_id, True):
                    return  # it cannot be told from a repeat later: not counted
                child.messages += 1
                self._emit(child, "message")
                return

    def tokens(self) -> int:
        return sum(child.tokens() for child in self.children.values())

    def cancellable(self) -> list[str]:
        """Children to cancel before their parent: those that allow it and are not idle."""
        return [c.session_id for c in self.children.values() if c.can_cancel and c.status != "idle"]

    def records(self) -> list[dict[str, Any]] | None:
        return [child.record() for child in self.children.values()] or None

    def warnings(self) -> list[str]:
        """What was dropped: children past the cap or with ids too long, their updates,
        updates of sessions that are not this run's."""
        out = [w for w in (self.children.warning(), self._messages.warning()) if w]
        if self.foreign:
            out.append(
                f"ignored {self.foreign} session/update(s) of sessions other than this run's "
                "(neither its session nor a child session followed): never its answer"
            )
        return out

    def _emit(self, child: Child, what: str) -> None:
        self._sink.emit("subagent", what=what, **child.record())
