"""What ``output_schema`` means (docs/explanation/envelope.md, output_schema): the worker answers
with one JSON value, which is taken out of surrounding whitespace and a Markdown code fence, parsed,
and — when the label maps to a JSON Schema file the operator registered — validated.

The answer is hostile input. It is parsed here by a bounded parser: ``NaN`` and
``Infinity`` are not JSON, a float that overflows or an integer of more than
:data:`MAX_INT_DIGITS` digits is refused, and so is nesting deeper than :data:`MAX_DEPTH`
(it would make every later step recurse past the interpreter's limit). It is *validated* in
a child process that the run's deadline can kill (``_output_schema/schema_check.py``), never here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp_bridge._os import bounded_json
from acp_bridge._os.fs.input_files import InputRefused, decode, read_bytes
from acp_bridge.errors import ConfigError, OutputSchemaError

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

_FENCE = re.compile(r"\A```[\w+.-]*[ \t]*\n(?P<body>.*?)\n?```\Z", re.DOTALL)
_ONE_LINE_FENCE = re.compile(r"\A```(?:(?i:json5?|jsonc|js|javascript)\b)?(?P<body>[^\n]*?)```\Z")
MAX_SCHEMA_BYTES = 4 << 20
"""The largest JSON Schema file read (a schema is a page, not a data set)."""
SCHEMA_FILE = "a JSON Schema file"
MAX_DEPTH = bounded_json.MAX_DEPTH
"""Deepest nesting of arrays and objects accepted in a structured answer."""
MAX_INT_DIGITS = 4300
"""Longest integer accepted in a structured answer (Python's own limit for ``int()``)."""


def strip_code_fence(text: str) -> str:
    """Surrounding whitespace and one enclosing Markdown code fence removed (a fence over
    lines, or all on one line: ```json {"ok": true}```)."""
    text = text.strip()
    match = _FENCE.match(text) or _ONE_LINE_FENCE.match(text)
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
            data = read_bytes(path, what=SCHEMA_FILE, limit=MAX_SCHEMA_BYTES)
            schema = bounded_json.loads(decode(data, str(path)))
            cls = validator_for(schema)
            cls.check_schema(schema)
        except InputRefused as exc:
            raise ConfigError(f"{exc} (output schema {label!r})") from exc
        except OSError as exc:
            raise ConfigError(f"{path}: output schema {label!r}: cannot read: {exc}") from exc
        except bounded_json.JsonRefused as exc:  # not JSON, nested too deep
            where = f"{path}:{exc.line}:{exc.column}" if exc.line else str(path)
            raise ConfigError(f"{where}: output schema {label!r}: {exc}") from exc
        except RecursionError as exc:  # a $ref cycle the check walks
            raise ConfigError(f"{path}: output schema {label!r}: nested too deeply") from exc
        except jsonschema.SchemaError as exc:
            raise ConfigError(
                f"{path}: output schema {label!r}: not a valid JSON Schema: {exc.message}"
            ) from exc
        validator: Validator = cls(schema)
        self._validators[label] = validator
        return validator

    def check(self) -> dict[str, ConfigError]:
        """Read and check every registered schema file (``profiles validate``): the broken
        ones, by label. A run checks its own before it starts the agent."""
        broken = {}
        for label in self.labels:
            try:
                self._validator(label)
            except ConfigError as exc:
                broken[label] = exc
        return broken

    def resources(self, label: str) -> tuple[str, dict[str, Any]] | None:
        """For validating an answer under ``label``: the URI of its schema file and every
        registered schema by URI (the files the operator registered, each checked; the only
        ones a ``$ref`` may reach). None when the label has no schema file."""
        if self._validator(label) is None:
            return None
        resources: dict[str, Any] = {}
        for other in self.labels:
            try:
                validator = self._validator(other)
            except ConfigError:  # broken: its own label fails; it resolves nothing here
                continue
            if validator is not None:
                resources[self._files[other].resolve().as_uri()] = validator.schema
        return self._files[label].resolve().as_uri(), resources


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"the number {text[:40]} overflows a float")
    return value


def _integer(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite, parse_int=_integer
)


def parse_structured_output(text: str, label: str, registry: SchemaRegistry | None = None) -> Any:
    """The JSON value in a worker's answer (code fence and whitespace removed), by the bounded
    parser. Validation against ``label``'s schema is not done here but in a child process
    (``_output_schema/schema_check.py``, which the entries await); ``registry`` is not used."""
    del registry
    body = strip_code_fence(text)
    if not body:
        raise OutputSchemaError(f"output for {label} is empty; a JSON value was required")
    try:
        value = _DECODER.decode(body)
    except json.JSONDecodeError as exc:
        raise OutputSchemaError(
            f"output for {label} is not valid JSON: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise OutputSchemaError(f"output for {label} nests deeper than {MAX_DEPTH}") from exc
    except ValueError as exc:
        raise OutputSchemaError(f"output for {label} is not valid JSON: {exc}") from exc
    if isinstance(value, dict | list) and bounded_json.too_deep(value, MAX_DEPTH):
        raise OutputSchemaError(f"output for {label} nests deeper than {MAX_DEPTH}")
    return value
