"""Observe profiles: which live events each one delivers."""

from __future__ import annotations

import pytest

from acp_bridge.errors import ConfigError
from acp_bridge.events import PROFILES, Event, EventSink


def delivered(profile: str, *events: tuple[str, dict[str, object]]) -> list[Event]:
    seen: list[Event] = []
    sink = EventSink(seen.append, profile, task_id="sub_x")
    for kind, data in events:
        sink.emit(kind, **data)  # type: ignore[arg-type]
    return seen


def test_web_extract_keeps_only_tool_calls_that_fetch_search_or_read() -> None:
    seen = delivered(
        "web_extract",
        ("tool_call", {"tool_call_id": "1", "tool_kind": "fetch"}),
        ("tool_call", {"tool_call_id": "2", "tool_kind": "execute"}),
        ("tool_update", {"tool_call_id": "3", "tool_kind": "search", "status": "completed"}),
        ("tool_update", {"tool_call_id": "4", "tool_kind": "edit", "status": "completed"}),
        ("tool_call", {"tool_call_id": "5", "tool_kind": "read"}),
        ("message", {"text": "hi"}),
        ("terminal", {"command": "ls"}),
        ("plan", {"entries": []}),
    )
    assert [(e.kind, e.data.get("tool_call_id")) for e in seen] == [
        ("tool_call", "1"),
        ("tool_update", "3"),
        ("tool_call", "5"),
        ("message", None),
    ]


def test_long_shell_adds_terminal_output_to_default() -> None:
    assert PROFILES["long_shell"] - PROFILES["default"] == {"terminal_output"}
    assert [e.kind for e in delivered("default", ("terminal_output", {"text": "x"}))] == []
    assert [e.kind for e in delivered("long_shell", ("terminal_output", {"text": "x"}))] == [
        "terminal_output"
    ]


def test_nobody_listening_builds_no_event_and_unknown_profiles_are_refused() -> None:
    assert not EventSink(None, "default").wants("message")
    with pytest.raises(ConfigError, match="unknown observe_profile 'loud'"):
        EventSink(print, "loud")
