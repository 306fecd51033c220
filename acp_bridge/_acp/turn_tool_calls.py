"""The tool calls of one turn, for ``meta.tool_calls``, ``tool_call`` / ``tool_update``
events and the permission policy (which judges a request over what the turn announced).

One model for both wire versions: v1's ``tool_call`` creates a call and ``tool_call_update``
changes it; in v2 the first ``tool_call_update`` of an id creates it, an explicit null resets
a field (title unset, kind ``other``, status ``pending``, name unset) while a missing one
leaves it, and ``tool_call_content_chunk`` appends one content item. A permission request
may name a call before any update does (:meth:`TurnToolCalls.seen`). The diffs in their
content go to file_changes.py. Bounded: :data:`MAX_TOOL_CALLS` calls, ids of
:data:`MAX_ID_CHARS`.
"""

from __future__ import annotations

from typing import Any

from acp_bridge._acp.file_changes import FileChanges
from acp_bridge._acp.schema import ToolCallUpdate
from acp_bridge._acp.toolcalls import TITLE_CHARS, announced
from acp_bridge.envelope import ToolCallRecord
from acp_bridge.events import EventSink

MAX_TOOL_CALLS = 10_000
"""Tool calls recorded for ``meta.tool_calls``; later ones are counted, not recorded."""
MAX_ID_CHARS = 256
"""Longest tool call or message id kept (ids are names, not payloads)."""

_NULLS = (("title", ""), ("kind", "other"), ("status", "pending"), ("name", None))


class _ToolCall:
    # A plain class, not a dataclass: those compile their methods as every command starts.
    __slots__ = ("record", "seen")

    def __init__(self, record: ToolCallRecord, seen: ToolCallUpdate | None = None) -> None:
        self.record = record
        self.seen = seen  # what the turn announced of it, bounded (for the permission policy)

    def apply(self, update: ToolCallUpdate, raw: dict[str, Any] | None = None) -> None:
        self.seen = seen = announced(self.seen, update)
        record = self.record
        if seen.title:
            record.title = seen.title[:TITLE_CHARS]
        if seen.name:
            record.name = seen.name
        if seen.kind:
            record.kind = seen.kind[:64]
        if seen.status:
            record.status = seen.status[:64]
        if update.locations:
            record.locations = [str(loc.get("path", "")) for loc in seen.locations or []]
        if raw is not None:  # v2: an explicit null resets; a missing field is unchanged
            for key, reset in _NULLS:
                if key in raw and raw[key] is None:
                    setattr(record, key, reset)


class TurnToolCalls:
    """Every tool call of the turn, by id."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self.calls: dict[str, _ToolCall] = {}
        self.dropped = 0
        self.file_changes = FileChanges()

    def update(self, update: dict[str, Any]) -> None:
        """A ``tool_call`` or ``tool_call_update``: creates the call when its id is new."""
        parsed = ToolCallUpdate.model_validate(update)
        call_id = parsed.tool_call_id
        if len(call_id) > MAX_ID_CHARS:
            raise ValueError("a tool call id longer than any agent uses")
        if parsed.content:
            self.file_changes.content(call_id, parsed.content)
        known = self.calls.get(call_id)
        if known is None:
            known = self._new(call_id)
            if known is None:
                return
            known.apply(parsed, update)
            self._emit("tool_call", known)
            return
        before = known.record.status
        known.apply(parsed, update)
        if known.record.status != before:
            self._emit("tool_update", known)

    def content_chunk(self, update: dict[str, Any]) -> None:
        """v2 ``tool_call_content_chunk``: one more content item (it creates the call too)."""
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str) or len(call_id) > MAX_ID_CHARS:
            raise TypeError("tool_call_content_chunk needs a toolCallId")
        if call_id not in self.calls:
            self.update({"toolCallId": call_id})
        self.file_changes.content(call_id, [update.get("content")])

    def seen(self, tool: ToolCallUpdate) -> None:
        """A permission request named this tool call (maybe before any update did)."""
        if tool.tool_call_id not in self.calls and len(tool.tool_call_id) <= MAX_ID_CHARS:
            call = self._new(tool.tool_call_id)
            if call is not None:
                call.apply(tool)

    def announced(self, tool_call_id: str) -> ToolCallUpdate | None:
        """What the turn announced of a tool call so far (bounded), if anything."""
        call = self.calls.get(tool_call_id)
        return call.seen if call is not None else None

    def records(self) -> list[ToolCallRecord]:
        return [call.record for call in self.calls.values()]

    def clear(self) -> None:
        self.calls = {}
        self.file_changes.clear()

    def warning(self) -> str | None:
        if not self.dropped:
            return None
        return f"recorded the first {MAX_TOOL_CALLS} tool calls; {self.dropped} more not recorded"

    def _new(self, call_id: str) -> _ToolCall | None:
        if len(self.calls) >= MAX_TOOL_CALLS:
            self.dropped += 1
            return None
        call = self.calls[call_id] = _ToolCall(
            ToolCallRecord(tool_call_id=call_id, status="pending")
        )
        return call

    def _emit(self, kind: Any, call: _ToolCall) -> None:
        record = self.record_fields(call.record)
        if kind == "tool_update":
            record["status"] = call.record.status
        self._sink.emit(kind, **record)

    @staticmethod
    def record_fields(record: ToolCallRecord) -> dict[str, Any]:
        return {
            "tool_call_id": record.tool_call_id,
            "title": record.title,
            "tool_kind": record.kind,
            "tool_name": record.name,
        }
