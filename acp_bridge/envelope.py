"""The SubtaskResult envelope: the one JSON object every entry path returns
(docs/explanation/envelope.md).

The first seven keys are a stable contract (they match the Mistermorph envelope);
``meta`` is an open extension. What ``output_schema`` means (a JSON answer, validated) is in
``_output_schema/structured_output.py``.
"""

import json
import re
import reprlib
import secrets
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from acp_bridge._records.field_defaults import empty_list, instance_of
from acp_bridge._records.json_pieces import json_pieces
from acp_bridge.errors import BridgeError, ConfigError, ErrorCode

SUMMARY_LIMIT = 160
BASH_RESULT_SCHEMA = "subtask.bash.result.v1"

Status = Literal["done", "failed"]
"""How a run ended: ``done``, or ``failed`` (``meta.error_code`` says why)."""
OutputKind = Literal["text", "json"]
"""What ``output`` holds: the worker's text, or JSON (an ``output_schema`` answer, ``bash``'s
result)."""
Entry = Literal["acp_spawn", "spawn", "bash", "ask"]
"""The entry path that made an envelope: the three subtask entries, plus ``ask`` (a host
loop's own result in the same shape)."""


def new_task_id() -> str:
    """A fresh task id: ``sub_`` and 12 hex digits."""
    return f"sub_{secrets.token_hex(6)}"


class PermissionRecord(BaseModel):
    """One permission decision, as it goes into ``meta.permissions``."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str = ""
    title: str = ""
    name: str | None = None
    """The tool's programmatic name, when the agent gives one (ACP ``ToolCall.name``)."""
    kind: str = ""
    decision: Literal["allowed", "rejected", "cancelled"]
    option_id: str = ""
    reason: str = ""


class ToolCallRecord(BaseModel):
    """One tool call the worker made, as it goes into ``meta.tool_calls``."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str
    title: str = ""
    name: str | None = None
    """The tool's programmatic name, when the agent gives one (ACP ``ToolCall.name``)."""
    kind: str = ""
    status: str = ""
    locations: list[str] = Field(default_factory=empty_list)


class TerminalRecord(BaseModel):
    """One terminal the bridge ran for the worker, as it goes into ``meta.terminals``."""

    model_config = ConfigDict(extra="forbid")

    terminal_id: str
    command: str
    exit_code: int | None = None
    signal: str | None = None
    truncated: bool = False
    timed_out: bool = False


class RefusalRecord(BaseModel):
    """A file or terminal request the bridge refused to serve, as it goes into
    ``meta.refusals`` (a worker reaching outside its roots is worth knowing about)."""

    model_config = ConfigDict(extra="forbid")

    method: str
    target: str = ""
    reason: str = ""


class ElicitationRecord(BaseModel):
    """One question the worker asked the user (ACP elicitation), as it goes into
    ``meta.elicitations``. Answers are not recorded, only which fields were answered."""

    model_config = ConfigDict(extra="forbid")

    mode: str
    message: str = ""
    action: Literal["accept", "decline", "cancel", "refused"]
    fields: list[str] = Field(default_factory=empty_list)
    url_host: str = ""
    reason: str = ""
    completed: bool = False


class Meta(BaseModel):
    """The open ``meta`` extension. Every key is optional; unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    entry: Entry | None = None
    agent: str | None = None
    error_code: ErrorCode | None = None
    stop_reason: str | None = None
    session_id: str | None = None
    duration_ms: int | None = None
    usage: dict[str, Any] | None = None
    permissions: list[PermissionRecord] | None = None
    tool_calls: list[ToolCallRecord] | None = None
    terminals: list[TerminalRecord] | None = None
    files_changed: list[str] | None = None
    files_read: list[str] | None = None
    diff: str | None = None
    sandbox: dict[str, Any] | None = None
    worktree: dict[str, Any] | None = None
    refusals: list[RefusalRecord] | None = None
    elicitations: list[ElicitationRecord] | None = None
    stderr_tail: str | None = None
    transcript: str | None = None
    depth: int | None = None
    model: str | None = None
    tools: list[str] | None = None
    tools_ignored: list[str] | None = None
    subtasks: list[dict[str, Any]] | None = None
    # acp_spawn: the session as the agent left it (model is the agent's model id there)
    session_method: str | None = None
    session_title: str | None = None
    mode: str | None = None
    config_options: dict[str, Any] | None = None
    available_commands: list[str] | None = None
    plan: list[dict[str, Any]] | None = None
    message_id: str | None = None
    replayed_updates: int | None = None
    unknown_updates: dict[str, int] | None = None
    trace_id: str | None = None
    protocol_version: int | None = None
    notices: list[dict[str, Any]] | None = None
    compactions: list[dict[str, Any]] | None = None
    subagents: list[dict[str, Any]] | None = None
    reported_changes: list[dict[str, Any]] | None = None
    reported_patch: str | None = None
    warnings: list[str] | None = None
    # batches (docs/explanation/batches.md): where the task ran, why its node was lost, its
    # place in the batch
    node: str | None = None
    lost_reason: Literal["node_died", "deadline"] | None = None
    batch: dict[str, Any] | None = None
    # config_error: every problem found, one each (``error`` joins them on one line)
    problems: list[str] | None = None


class SubtaskResult(BaseModel):
    """The normalized result of one subtask, whatever ran it and however it ended."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    status: Status
    summary: str
    output_kind: OutputKind
    output_schema: str = ""
    output: Any
    error: str = ""
    meta: Meta = Field(default_factory=instance_of(Meta))

    @property
    def ok(self) -> bool:
        return self.status == "done"

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        # A bounded repr: outputs can be many MB, and reprs get built where nobody reads
        # them (CPython 3.11's asyncio reprs the main task's result at loop shutdown; for a
        # 50 MiB output that made anyio.run peak at 5x the output's size).
        for name, value in super().__repr_args__():
            yield name, (_Clipped(_REPR.repr(value)) if name == "output" else value)

    def to_dict(self) -> dict[str, Any]:
        """The envelope as plain JSON data; ``meta`` keys that were never set are left out."""
        data = self.model_dump(mode="json", exclude={"meta"})
        data["meta"] = self.meta.model_dump(mode="json", exclude_none=True)
        return data

    def to_json(self, *, indent: int | None = None) -> str:
        return "".join(self.json_pieces(indent=indent))

    def json_pieces(
        self, *, indent: int | None = None, ensure_ascii: bool = False
    ) -> Iterator[str]:
        """:meth:`to_json`'s text in pieces: a long text output is encoded a slice at a time
        (:func:`~acp_bridge._records.json_pieces.json_pieces`), never copied whole once more."""
        return json_pieces(self.to_dict(), indent=indent, ensure_ascii=ensure_ascii)


STABLE_KEYS = ("task_id", "status", "summary", "output_kind", "output_schema", "output", "error")


def is_envelope(value: Any) -> bool:
    """Whether JSON data is a SubtaskResult envelope (it has every stable key)."""
    return isinstance(value, dict) and all(key in value for key in STABLE_KEYS)


class _Clipped:
    """Text that is already a repr (so it is not quoted again)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 160


# --- building envelopes -------------------------------------------------------------


def first_line(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """The first non-blank line of ``text``, stripped, cut to ``limit`` characters.

    Searched for, never split for: ``splitlines()`` of a 24 MiB answer is a list of all its
    lines. The first non-space character starts the first non-blank line; the line is long
    when a non-space character lies past ``limit`` before its end; only ``limit`` characters
    are ever copied."""
    found = _NON_SPACE.search(text)
    if found is None:
        return ""
    start = found.start()
    brk = _LINE_BREAK.search(text, start)
    end = brk.start() if brk else len(text)
    if _NON_SPACE.search(text, start + limit, end):
        return text[start : start + limit - 1].rstrip() + "…"
    return text[start : min(end, start + limit)].rstrip()


_NON_SPACE = re.compile(r"\S")
_LINE_BREAK = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
"""What ``str.splitlines`` splits at."""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _summary(base: str, notes: list[str]) -> str:
    """``base`` plus bracketed notes, the notes kept whole and the base cut to fit."""
    suffix = "".join(f" [{n}]" for n in notes)
    room = SUMMARY_LIMIT - len(suffix)
    if room < 20:  # pathological notes: keep the base readable, cut everything at the end
        return _clip(base + suffix, SUMMARY_LIMIT)
    return _clip(base, room) + suffix


def _output_line(output: Any, kind: OutputKind) -> str:
    if kind == "json":
        return json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    return str(output)


def done(
    output: Any,
    *,
    output_kind: OutputKind = "text",
    output_schema: str = "",
    meta: Meta | None = None,
    task_id: str | None = None,
    summary: str | None = None,
    notes: list[str] | None = None,
) -> SubtaskResult:
    """A successful envelope. The summary defaults to the first line of the output."""
    base = summary if summary is not None else first_line(_output_line(output, output_kind))
    return SubtaskResult(
        task_id=task_id or new_task_id(),
        status="done",
        summary=_summary(base or "done (no output)", notes or []),
        output_kind=output_kind,
        output_schema=output_schema,
        output=output,
        meta=meta or Meta(),
    )


def failed(
    error: str,
    code: ErrorCode,
    *,
    output: Any = "",
    output_kind: OutputKind = "text",
    output_schema: str = "",
    meta: Meta | None = None,
    task_id: str | None = None,
    summary: str | None = None,
    notes: list[str] | None = None,
) -> SubtaskResult:
    """A failed envelope. ``output`` keeps whatever partial result exists."""
    one_line = " ".join(error.split()) or f"failed ({code.value})"
    meta = (meta or Meta()).model_copy(update={"error_code": code})
    base = summary if summary is not None else f"failed: {one_line}"
    return SubtaskResult(
        task_id=task_id or new_task_id(),
        status="failed",
        summary=_summary(base, notes or []),
        output_kind=output_kind,
        output_schema=output_schema,
        output=output,
        error=one_line,
        meta=meta,
    )


def from_error(exc: BridgeError, **kwargs: Any) -> SubtaskResult:
    """The failed envelope for a library error (the entry points' catch-all). A config
    error with several problems lists each in ``meta.problems`` too: ``error`` is one line,
    and a broken profile has seven problems as easily as one."""
    if isinstance(exc, ConfigError) and len(exc.problems) > 1:
        meta = kwargs.get("meta") or Meta()
        kwargs["meta"] = meta.model_copy(update={"problems": [str(p) for p in exc.problems]})
    return failed(str(exc), exc.code, **kwargs)
