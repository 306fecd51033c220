"""What a tool call says about itself, as the permission policy judges it.

A permission request's ``toolCall`` is often thinner than what the turn already announced
for the same ``toolCallId`` (zed's claude-code-acp leaves ``kind`` out of the request; the
``tool_call`` update 12 ms earlier said ``execute``). :func:`overlay` lays the request over
the announcement, field by field, so the policy judges the whole tool call.

What is kept of an announcement is bounded (:func:`kept`): the title, tool name, kind and status, at
most :data:`MAX_LOCATIONS` locations, the paths of ``diff`` content, and of ``rawInput``
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

from acp_bridge._acp.schema import ToolCallUpdate
from acp_bridge._os.cmdline import Command, from_argv, parse_line

RAW_PATH_KEYS = ("path", "file_path", "filePath", "abs_path", "absolute_path", "notebook_path")
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
