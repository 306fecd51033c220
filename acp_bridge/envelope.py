"""The SubtaskResult envelope: the one JSON object every entry path returns (DESIGN §2).

The first seven keys are a stable contract (they match the Mistermorph envelope);
``meta`` is an open extension. This module also owns what ``output_schema`` means:
turning a worker's answer into a JSON value and validating it against a registered
JSON Schema.
"""

from __future__ import annotations

import json
import re
import reprlib
import secrets
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from acp_bridge.errors import (
    BridgeError,
    ConfigError,
    ErrorCode,
    OutputSchemaError,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SUMMARY_LIMIT = 160
BASH_RESULT_SCHEMA = "subtask.bash.result.v1"

Status = Literal["done", "failed"]
OutputKind = Literal["text", "json"]
# The three subtask entry paths, plus ``ask``: a host loop's own result in the same shape.
Entry = Literal["acp_spawn", "spawn", "bash", "ask"]


def new_task_id() -> str:
    """A fresh task id: ``sub_`` and 12 hex digits."""
    return f"sub_{secrets.token_hex(6)}"


class PermissionRecord(BaseModel):
    """One permission decision, as it goes into ``meta.permissions``."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str = ""
    title: str = ""
    kind: str = ""
    decision: Literal["allowed", "rejected", "cancelled"]
    option_id: str = ""
    reason: str = ""


class ToolCallRecord(BaseModel):
    """One tool call the worker made, as it goes into ``meta.tool_calls``."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: str
    title: str = ""
    kind: str = ""
    status: str = ""
    locations: list[str] = Field(default_factory=list)


class TerminalRecord(BaseModel):
    """One terminal the bridge ran for the worker, as it goes into ``meta.terminals``."""

    model_config = ConfigDict(extra="forbid")

    terminal_id: str
    command: str
    exit_code: int | None = None
    signal: str | None = None
    truncated: bool = False


class RefusalRecord(BaseModel):
    """A file or terminal request the bridge refused to serve, as it goes into
    ``meta.refusals`` (a worker reaching outside its roots is worth knowing about)."""

    model_config = ConfigDict(extra="forbid")

    method: str
    target: str = ""
    reason: str = ""


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
    refusals: list[RefusalRecord] | None = None
    stderr_tail: str | None = None
    transcript: str | None = None
    depth: int | None = None
    model: str | None = None
    tools: list[str] | None = None
    tools_ignored: list[str] | None = None
    subtasks: list[dict[str, Any]] | None = None
    warnings: list[str] | None = None


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
    meta: Meta = Field(default_factory=Meta)

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
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


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
    """The first non-blank line of ``text``, stripped, cut to ``limit`` characters."""
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return _clip(line, limit)


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
    """The failed envelope for a library error (the entry points' catch-all)."""
    return failed(str(exc), exc.code, **kwargs)


def bash_result(
    *,
    exit_code: int,
    stdout: str,
    stderr: str,
    stdout_truncated: bool = False,
    stderr_truncated: bool = False,
    timeout_s: float | None = None,
    start_error: str = "",
    meta: Meta | None = None,
    task_id: str | None = None,
) -> SubtaskResult:
    """The ``subtask.bash.result.v1`` envelope of one shell command (DESIGN §2).

    Exit 0 is done; any other exit fails with ``bash exited with code N``; a timeout is
    reported as exit code 124; a command that could not start as exit code -1.
    """
    output = {
        "exit_code": exit_code,
        "stdout_truncated": stdout_truncated,
        "stderr_truncated": stderr_truncated,
        "stdout": stdout,
        "stderr": stderr,
    }
    common: dict[str, Any] = {
        "output": output,
        "output_kind": "json",
        "output_schema": BASH_RESULT_SCHEMA,
        "meta": meta,
        "task_id": task_id,
    }
    if start_error:
        return failed(f"bash could not start: {start_error}", ErrorCode.SPAWN_FAILED, **common)
    if timeout_s is not None:
        error = f"bash timed out after {timeout_s:g}s"
        return failed(error, ErrorCode.TIMEOUT, **common)
    if exit_code != 0:
        error = f"bash exited with code {exit_code}"
        return failed(error, ErrorCode.NONZERO_EXIT, **common)
    return done(summary=first_line(stdout) or first_line(stderr) or "exit 0 (no output)", **common)


# --- output_schema: JSON answers and their validation ---------------------------------

_FENCE = re.compile(r"\A```[\w+.-]*[ \t]*\n(?P<body>.*?)\n?```\Z", re.DOTALL)


def strip_code_fence(text: str) -> str:
    """Surrounding whitespace and one enclosing Markdown code fence removed."""
    text = text.strip()
    match = _FENCE.match(text)
    return match.group("body").strip() if match else text


def structured_output_instruction(label: str, schema: Mapping[str, Any] | bool | None) -> str:
    """What the worker is told when the caller wants JSON under ``label``."""
    lines = [
        "",
        f"Answer with a single JSON value only (contract: {label}).",
        "No prose, no explanation, no Markdown code fence.",
    ]
    if schema is not None:
        lines.append("It must validate against this JSON Schema:")
        lines.append(json.dumps(schema, ensure_ascii=False, indent=1))
    return "\n".join(lines)


class SchemaRegistry:
    """Output-schema labels the operator mapped to JSON Schema files.

    A label without a file is still a contract: the answer must be JSON, but its shape
    is not checked. Schema files are read and checked once, on first use.
    """

    def __init__(self, files: Mapping[str, Path] | None = None) -> None:
        self._files = dict(files or {})
        self._validators: dict[str, Validator] = {}

    @cached_property
    def labels(self) -> list[str]:
        return sorted(self._files)

    def schema(self, label: str) -> Mapping[str, Any] | bool | None:
        """The JSON Schema registered for ``label`` (a mapping, or a boolean schema), or None."""
        validator = self._validator(label)
        return None if validator is None else validator.schema

    def _validator(self, label: str) -> Validator | None:
        if label in self._validators:
            return self._validators[label]
        path = self._files.get(label)
        if path is None:
            return None
        # Imported here: jsonschema costs ~80 ms and most runs never validate.
        import jsonschema
        from jsonschema.validators import validator_for

        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
            cls = validator_for(schema)
            cls.check_schema(schema)
        except OSError as exc:
            raise ConfigError(f"{path}: output schema {label!r}: cannot read: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}:{exc.lineno}:{exc.colno}: output schema {label!r}: "
                f"not valid JSON: {exc.msg}"
            ) from exc
        except jsonschema.SchemaError as exc:
            raise ConfigError(
                f"{path}: output schema {label!r}: not a valid JSON Schema: {exc.message}"
            ) from exc
        validator: Validator = cls(schema)
        self._validators[label] = validator
        return validator

    def validate(self, label: str, value: Any) -> None:
        """Raise :class:`OutputSchemaError` when ``value`` breaks ``label``'s schema."""
        validator = self._validator(label)
        if validator is None:
            return
        from jsonschema.exceptions import best_match

        error = best_match(validator.iter_errors(value))
        if error is not None:
            where = error.json_path if error.path else "the answer"
            raise OutputSchemaError(f"output does not match {label}: at {where}: {error.message}")


def parse_structured_output(text: str, label: str, registry: SchemaRegistry | None) -> Any:
    """The JSON value in a worker's answer, validated when ``label`` has a schema."""
    body = strip_code_fence(text)
    if not body:
        raise OutputSchemaError(f"output for {label} is empty; a JSON value was required")
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise OutputSchemaError(
            f"output for {label} is not valid JSON: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno})"
        ) from exc
    if registry is not None:
        registry.validate(label, value)
    return value
