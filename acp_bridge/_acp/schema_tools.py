"""Wire types of tool calls and permission requests (v1, and v2's permission shape read into
v1's). Same rules as schema.py, whose :class:`Wire` base they share; schema.py re-exports them.
"""

from typing import Any

from pydantic import model_validator

from acp_bridge._acp.schema import Wire


class ToolCallUpdate(Wire):
    """A ``tool_call`` or ``tool_call_update`` update, or the tool call a permission request
    is about (ACP's ToolCallUpdate): everything but the id is optional."""

    tool_call_id: str
    title: str | None = None
    name: str | None = None  # the tool's programmatic name (ToolCall.name, schema 1.22+)
    kind: str | None = None
    status: str | None = None
    locations: list[dict[str, Any]] | None = None
    content: list[dict[str, Any]] | None = None
    raw_input: Any = None
    raw_output: Any = None


class PermissionOption(Wire):
    option_id: str
    name: str = ""
    kind: str


class RequestPermissionParams(Wire):
    """A permission request; v2's shape (``title`` and a ``subject``) is read into v1's (a
    ``toolCall``), so one policy and one ledger judge both."""

    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]

    @model_validator(mode="before")
    @classmethod
    def _v2_subject(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "toolCall" in data or "tool_call" in data:
            return data
        return {**data, "toolCall": subject_tool_call(data.get("title"), data.get("subject"))}


def subject_tool_call(title: Any, subject: Any) -> dict[str, Any]:
    """The tool call a v2 permission request is about: its ``tool_call`` subject, or a
    ``command`` subject as an ``execute`` call of that command, or just its title."""
    title = title if isinstance(title, str) else None
    subject = subject if isinstance(subject, dict) else {}
    kind, tool, command = subject.get("type"), subject.get("toolCall"), subject.get("command")
    if kind == "tool_call" and isinstance(tool, dict):
        tool = dict(tool)
        if title and not tool.get("title"):
            tool["title"] = title
        return tool
    if kind == "command" and isinstance(command, str):
        call_id = subject.get("toolCallId")
        return {
            "toolCallId": call_id if isinstance(call_id, str) else "",
            "title": title or command,
            "kind": "execute",
            "rawInput": {"command": command, "cwd": subject.get("cwd")},
        }
    # No subject, or a newer (`_`-prefixed) one: judged by its title, kept raw in the transcript.
    return {"toolCallId": "", "title": title}


def permission_selected(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


PERMISSION_CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
