"""Lean ACP (protocol v1) wire types: only the subset the bridge sends and reads.

Why our own models and not ``acp.schema`` from the official SDK at run time (its import
cost, the update kinds and stop reasons it rejects), and how the SDK stays the test oracle:
docs/explanation/acp.md, our own wire types.

Reading is tolerant: unknown fields are kept (``extra="allow"``), unknown variants are not
errors. Writing is exact: camelCase keys, nothing that is None.

Here: the base of every wire type, the error codes, the session and prompt methods, the
agent's requests and the rare update kinds; the ``initialize`` handshake's types are in
initialize_schema.py, the session methods beyond a new session's turn in session_schema.py.
"""

from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from acp_bridge._records.field_defaults import empty_list
from acp_bridge._records.numbers import NumbersNotBooleans
from acp_bridge.errors import MalformedReply

PROTOCOL_VERSION = 1

# JSON-RPC / ACP error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
KNOWN_STOP_REASONS: frozenset[str] = frozenset(
    {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
)


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ValueError("holds a NUL character, which no path, command or environment can")
    return text


OsStr = Annotated[str, AfterValidator(_no_nul)]
"""A string that goes to the OS (a path, a command, an argument, an environment entry): a
NUL in it is the agent's invalid params, not the bridge's ``ValueError`` later."""


def camel(name: str) -> str:
    """A field's name on the wire: ``session_id`` → ``sessionId``. pydantic's ``to_camel``
    gives the same for every field here (a test checks) with three regular expressions a
    name; the wire types have ~150 fields, named as every command starts."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Wire(NumbersNotBooleans):
    """Base of every wire type: camelCase on the wire, unknown fields kept, a boolean never
    a number (``_records/numbers.py``, the check the config shares); a nested shape is a
    wire type of its own, so it is checked the same way."""

    model_config = ConfigDict(
        alias_generator=camel,
        populate_by_name=True,
        extra="allow",
        frozen=True,
        defer_build=True,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON-ready dict to send: camelCase, None left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- sessions -------------------------------------------------------------------------


class NameValue(Wire):
    name: OsStr
    value: OsStr


class McpServerStdio(Wire):
    # In v1 stdio servers carry no "type" field, and all four keys are required; v2 wants
    # ``type: "stdio"`` (set by the session for a v2 connection).
    type: Literal["stdio"] | None = None
    name: str
    command: str
    args: list[str]
    env: list[NameValue]


class McpServerHttp(Wire):
    type: Literal["http", "sse"]
    name: str
    url: str
    headers: list[NameValue]


class NewSessionParams(Wire):
    cwd: str
    mcp_servers: list[McpServerStdio | McpServerHttp]  # required, may be empty
    additional_directories: list[str] | None = None
    system_prompt: dict[str, Any] | None = None  # only where sessionCapabilities.systemPrompt


class SessionMode(Wire):
    id: str
    name: str = ""
    description: str | None = None


class SessionModeState(Wire):
    current_mode_id: str
    available_modes: list[SessionMode] = Field(default_factory=empty_list)


class ConfigSelectOption(Wire):
    """One selectable value of a select option (ACP's ``SessionConfigSelectOption``)."""

    value: str | int | float  # the schema's value id, a string; a number is read as its text
    name: str = ""
    description: str | None = None


class ConfigSelectGroup(Wire):
    """A named group of selectable values (ACP's ``SessionConfigSelectGroup``)."""

    group: str
    name: str = ""
    options: list[ConfigSelectOption]


class ConfigOption(Wire):
    """A session config option; ``options`` may hold plain options or groups of them, each
    member checked as the schema says (a group whose ``options`` is not a list of options
    is refused where it is read, like any other shape that does not fit)."""

    id: str
    name: str = ""
    type: str = "select"
    category: str | None = None
    current_value: Any = None
    options: list[ConfigSelectOption | ConfigSelectGroup] = Field(default_factory=empty_list)

    def allowed_values(self) -> list[str]:
        """Every selectable value, groups flattened."""
        values: list[str] = []
        for option in self.options:
            members = option.options if isinstance(option, ConfigSelectGroup) else [option]
            values += [str(member.value) for member in members]
        return values


class ModelInfo(Wire):
    model_id: str
    name: str = ""
    description: str | None = None


class SessionModelState(Wire):
    """The older model list (``models`` in session setup replies, with ``session/set_model``):
    removed from ACP's unstable schema, still sent by agents such as gemini-cli and qwen."""

    current_model_id: str | None = None
    available_models: list[ModelInfo] = Field(default_factory=empty_list)


class SessionSetup(Wire):
    """What a session setup reply may carry: session/new, load, resume, fork (v2 read into
    it by ``_acp/wire/versions.py``)."""

    modes: SessionModeState | None = None
    models: SessionModelState | None = None
    config_options: list[ConfigOption] | None = None
    available_commands: list[Any] | None = None  # v2 lists them here too


class NewSessionResult(SessionSetup):
    session_id: str


class SetModeParams(Wire):
    session_id: str
    mode_id: str


class SetConfigOptionParams(Wire):
    session_id: str
    config_id: str
    value: str | bool
    # v1 tags only a boolean value; v2 tags every value ("id" for a select's value id)
    type: Literal["boolean", "id"] | None = None


class SetConfigOptionResult(Wire):
    config_options: list[ConfigOption] = Field(default_factory=empty_list)


class TextBlock(Wire):
    type: Literal["text"] = "text"
    text: str


class PromptParams(Wire):
    session_id: str
    prompt: list[TextBlock]
    idempotency_key: str | None = None  # v2 (RFD idempotency keys): inserted at most once


class PromptResult(Wire):
    stop_reason: str
    usage: Any = None
    """Checked field by field where it is read: a usage of the wrong shape is a warning, not
    a failed turn (the turn did end)."""


class SessionIdParams(Wire):
    """Params of session/cancel and session/close."""

    session_id: str


# --- agent → client requests ------------------------------------------------------------


class ReadTextFileParams(Wire):
    session_id: str
    path: OsStr
    line: int | None = Field(None, ge=1)
    limit: int | None = Field(None, ge=0)


class WriteTextFileParams(Wire):
    session_id: str
    path: OsStr
    content: str


class CreateTerminalParams(Wire):
    session_id: str
    command: OsStr
    args: list[OsStr] = Field(default_factory=empty_list)
    env: list[NameValue] = Field(default_factory=empty_list)
    cwd: OsStr | None = None
    output_byte_limit: int | None = Field(None, ge=0)


class TerminalIdParams(Wire):
    session_id: str
    terminal_id: str


# --- session/update ----------------------------------------------------------------------
# The update stream is the hot path: chunks are read straight from the dicts (see
# ``_acp/turn/turn_collector.py``). These models serve the rare kinds, where readability beats
# microseconds.


class PlanEntry(Wire):
    content: str
    priority: str = "medium"
    status: str = "pending"


class PlanUpdate(Wire):
    entries: list[PlanEntry] = Field(default_factory=empty_list)


class UsageUpdate(Wire):
    used: int | None = None
    size: int | None = None
    cost: dict[str, Any] | None = None


ModelT = TypeVar("ModelT", bound=BaseModel)


def parse_reply(model: type[ModelT], data: Any, method: str) -> ModelT:
    """An agent's reply as ``model``; a malformed one is the agent's protocol error."""
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "result"
        raise MalformedReply(f"malformed reply to {method}: {where}: {first['msg']}") from exc


# Tool calls and permission requests (v1, and v2's permission shape read into v1's).


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
    """One answer the agent offers to a permission request: its ``option_id`` (what a
    :data:`~acp_bridge.PermissionHook` returns to choose it), a ``name`` to show and a
    ``kind`` (``allow_once``, ``allow_always``, ``reject_once``, ``reject_always``)."""

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
