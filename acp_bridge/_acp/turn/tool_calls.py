"""The tool calls of one turn, for ``meta.tool_calls``, ``tool_call`` / ``tool_update``
events and the permission policy (which judges a request over what the turn announced).

One model for both wire versions: v1's ``tool_call`` creates a call and ``tool_call_update``
changes it; in v2 the first ``tool_call_update`` of an id creates it, an explicit null resets
a field (title unset, kind ``other``, status ``pending``, name unset) while a missing one
leaves it, and ``tool_call_content_chunk`` appends one content item. A permission request
may name a call before any update does (:meth:`TurnToolCalls.seen`). The diffs in their
content go to :mod:`.file_changes`. Bounded: :data:`MAX_TOOL_CALLS` calls, ids of
:data:`MAX_ID_CHARS`; a call past them is dropped with all its updates, content and diffs,
and counted (``_records/bounded.py``) — never recorded under a cut id, never another's.

What a tool call says about itself, as the permission policy judges it. A permission
request's ``toolCall`` is often thinner than what the turn already announced for the same
``toolCallId`` (zed's claude-code-acp leaves ``kind`` out of the request; the ``tool_call``
update 12 ms earlier said ``execute``). :func:`overlay` lays the request over the
announcement, field by field, so the policy judges the whole tool call.

What is kept of an announcement is bounded (:func:`kept`): the title, tool name, kind and
status, at most :data:`MAX_LOCATIONS` locations, the paths of ``diff`` content, and of ``rawInput``
only the fields the policy reads — path-like ones and the command — each cut to a size.
A tool call's ``rawInput`` may hold a whole file; none of that is needed to judge it.

:func:`command_of` is the command a tool call runs, as the policy parses it: ``rawInput``'s
``command`` (a shell line, or an argv such as codex's ``["bash", "-lc", "…"]``), else, for an
``execute`` tool call, its title with surrounding backticks removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from acp_bridge._acp.turn.file_changes import FileChanges
from acp_bridge._acp.wire.schema import ToolCallUpdate
from acp_bridge._os.cmdline import Command, from_argv, parse_line
from acp_bridge._records.bounded import BoundedTable
from acp_bridge.envelope import ToolCallRecord
from acp_bridge.events import EventSink

# pydantic-acp names a tool call's locations by the last four (its extract_tool_call_locations)
RAW_PATH_KEYS = ("path", "file_path", "filePath", "abs_path", "absolute_path", "notebook_path",
                 "filepath", "target_path", "destination_path", "source_path")  # fmt: skip
RAW_COMMAND_KEYS = ("command", "cmd", "argv")
MAX_LOCATIONS = 64
MAX_TEXT = 8192
MAX_WORDS = 256
TITLE_CHARS = 1000
NAME_CHARS = 256


def _small(value: Any) -> Any:
    """A string or list of strings within the size limits, else None."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else None
    words = isinstance(value, list) and len(value) <= MAX_WORDS
    if words and all(isinstance(v, str) and len(v) <= MAX_TEXT for v in value):
        return list(value)
    return None


def kept_raw_input(raw: Any) -> dict[str, Any] | None:
    """The fields of ``rawInput`` the policy judges, bounded; None when there are none."""
    if not isinstance(raw, dict):
        return None
    kept = {}
    for key in (*RAW_PATH_KEYS, *RAW_COMMAND_KEYS):
        value = _small(raw.get(key))
        if value is not None:
            kept[key] = value
    return kept or None


def _diff_paths(content: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    diffs = [
        {"type": "diff", "path": item["path"]}
        for item in content or []
        if isinstance(item, dict)
        and item.get("type") == "diff"
        and isinstance(item.get("path"), str)
    ]
    return diffs[:MAX_LOCATIONS] or None


def kept(tool: ToolCallUpdate) -> ToolCallUpdate:
    """``tool`` reduced to what judging it needs (bounded in size)."""
    locations = [
        {"path": loc["path"]}
        for loc in (tool.locations or [])[:MAX_LOCATIONS]
        if isinstance(loc, dict)
        and isinstance(loc.get("path"), str)
        and len(loc["path"]) <= MAX_TEXT
    ]
    return ToolCallUpdate(
        tool_call_id=tool.tool_call_id,
        title=tool.title[:TITLE_CHARS] if tool.title else tool.title,
        name=tool.name[:NAME_CHARS] if tool.name else tool.name,
        kind=tool.kind,
        status=tool.status,
        locations=locations or None,
        content=_diff_paths(tool.content),
        raw_input=kept_raw_input(tool.raw_input),
    )


_FIELDS = ("title", "name", "kind", "status", "locations", "content", "raw_input")


def _missing(value: Any) -> bool:
    return value is None or value == "" or value == []


def overlay(earlier: ToolCallUpdate | None, later: ToolCallUpdate) -> ToolCallUpdate:
    """``later`` laid over ``earlier``: every field ``later`` has wins, the rest is taken
    from ``earlier``. A permission request over what the turn announced for its id."""
    if earlier is None:
        return later
    update = {
        name: getattr(earlier, name)
        for name in _FIELDS
        if _missing(getattr(later, name)) and not _missing(getattr(earlier, name))
    }
    return later.model_copy(update=update) if update else later


def announced(earlier: ToolCallUpdate | None, update: ToolCallUpdate) -> ToolCallUpdate:
    """What is kept of a tool call after one more update of it (bounded, see :func:`kept`)."""
    return overlay(earlier, kept(update))


def command_of(tool: ToolCallUpdate) -> Command | None:
    """The command a tool call runs (see the module doc), parsed; None when it names none."""
    raw = tool.raw_input if isinstance(tool.raw_input, dict) else {}
    for key in RAW_COMMAND_KEYS:
        value = _small(raw.get(key))
        if isinstance(value, str) and value.strip():
            return parse_line(value)
        if isinstance(value, list) and value:
            return from_argv(value)
    if tool.kind == "execute" and tool.title:
        return parse_line(unquoted(tool.title))
    return None


def unquoted(title: str) -> str:
    """A title without the backticks or quotes some agents put around a command."""
    text = title.strip()
    for mark in ("```", "`", '"', "'"):
        if len(text) > 2 * len(mark) and text.startswith(mark) and text.endswith(mark):
            return text[len(mark) : -len(mark)].strip()
    return text


def _named_paths(tool: ToolCallUpdate) -> Iterator[Any]:
    for location in tool.locations or []:
        yield location.get("path")
    for item in tool.content or []:
        if isinstance(item, dict) and item.get("type") == "diff":
            yield item.get("path")
    if isinstance(tool.raw_input, dict):
        for key in RAW_PATH_KEYS:
            yield tool.raw_input.get(key)


def named_locations(tool: ToolCallUpdate, cwd: Path | None = None) -> tuple[str, ...]:
    """Every path a tool call names, made absolute against ``cwd``, without duplicates."""
    found: dict[str, None] = {}
    for value in _named_paths(tool):
        if isinstance(value, str) and value:
            path = Path(value)
            if not path.is_absolute() and cwd is not None:
                path = cwd / path
            found[str(path)] = None
    return tuple(found)


MAX_TOOL_CALLS = 10_000
"""Tool calls recorded for ``meta.tool_calls``; later ones are counted, not recorded."""
MAX_ID_CHARS = 256
"""Longest tool call or message id kept (ids are names, not payloads)."""

_NULLS = (("title", ""), ("kind", "other"), ("status", "pending"), ("name", None))


def _new_call(call_id: str) -> _ToolCall:
    return _ToolCall(ToolCallRecord(tool_call_id=call_id, status="pending"))


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
        self.calls: BoundedTable[str, _ToolCall] = BoundedTable(
            "tool calls", MAX_TOOL_CALLS, MAX_ID_CHARS
        )
        self.file_changes = FileChanges()

    def update(self, update: dict[str, Any]) -> None:
        """A ``tool_call`` or ``tool_call_update``: creates the call when its id is new."""
        parsed = ToolCallUpdate.model_validate(update)
        call_id = parsed.tool_call_id
        known = self.calls.get(call_id)
        if known is None:
            known = self.calls.add(call_id, lambda: _new_call(call_id))
            if known is None:  # past the cap, or an id too long: dropped with its content
                return
            if parsed.content:
                self.file_changes.content(call_id, parsed.content)
            known.apply(parsed, update)
            self._emit("tool_call", known)
            return
        if parsed.content:
            self.file_changes.content(call_id, parsed.content)
        before = known.record.status
        known.apply(parsed, update)
        if known.record.status != before:
            self._emit("tool_update", known)

    def content_chunk(self, update: dict[str, Any]) -> None:
        """v2 ``tool_call_content_chunk``: one more content item (it creates the call too)."""
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str):
            raise TypeError("tool_call_content_chunk needs a toolCallId")
        if call_id not in self.calls:
            self.update({"toolCallId": call_id})
            if call_id not in self.calls:  # dropped (counted): so is its content
                return
        self.file_changes.content(call_id, [update.get("content")])

    def seen(self, tool: ToolCallUpdate) -> None:
        """A permission request named this tool call (maybe before any update did)."""
        if tool.tool_call_id not in self.calls:
            call = self.calls.add(tool.tool_call_id, lambda: _new_call(tool.tool_call_id))
            if call is not None:
                call.apply(tool)

    def announced(self, tool_call_id: str) -> ToolCallUpdate | None:
        """What the turn announced of a tool call so far (bounded), if anything."""
        call = self.calls.get(tool_call_id)
        return call.seen if call is not None else None

    def records(self) -> list[ToolCallRecord]:
        return [call.record for call in self.calls.values()]

    def made(self) -> set[str]:
        """The tool calls that completed: only their reported file changes were made."""
        calls = self.calls.items()
        return {call_id for call_id, call in calls if call.record.status == "completed"}

    def reported_changes(self) -> list[dict[str, Any]]:
        """The file changes the completed tool calls reported (``meta.reported_changes``)."""
        return self.file_changes.records(self.made())

    def reported_patch(self) -> str:
        return self.file_changes.patch_text(self.made())

    def clear(self) -> None:
        self.calls.reset()
        self.file_changes.clear()

    def warnings(self) -> list[str]:
        """What was dropped: tool calls past the cap or with ids too long, diffs past theirs."""
        return [w for w in (self.calls.warning(), *self.file_changes.warnings()) if w]

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
