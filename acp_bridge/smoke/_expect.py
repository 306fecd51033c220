"""Checking one envelope against a case's expectations: a list of plain-language failures."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Any

from acp_bridge._os import bounded_json
from acp_bridge._os.fs.input_files import InputRefused, read_bytes, read_text
from acp_bridge._output_schema.structured_output import MAX_SCHEMA_BYTES, SCHEMA_FILE
from acp_bridge.envelope import SubtaskResult
from acp_bridge.smoke._suite import Expect, FileExpect, PermissionExpect

_CLIP = 200
CHECKED_FILE = "a file a case expects"
MAX_CHECKED_FILE_BYTES = 16 << 20
"""The most of a workspace file an expectation reads (the agent wrote it: it may be anything)."""


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _CLIP else text[: _CLIP - 1] + "…"


def subset_mismatch(expected: Any, actual: Any, where: str = "envelope") -> str | None:
    """Where ``actual`` fails to contain ``expected``: mappings key by key, lists item by
    item (a prefix), anything else by equality. None when it matches."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where}: expected a mapping, got {_clip(actual)}"
        for key, value in expected.items():
            if key not in actual:
                return f"{where}.{key}: missing (expected {_clip(value)})"
            found = subset_mismatch(value, actual[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) < len(expected):
            return f"{where}: expected at least {len(expected)} item(s), got {_clip(actual)}"
        for index, value in enumerate(expected):
            found = subset_mismatch(value, actual[index], f"{where}[{index}]")
            if found:
                return found
        return None
    if expected != actual:
        return f"{where}: expected {_clip(expected)}, got {_clip(actual)}"
    return None


def _output_text(result: SubtaskResult) -> str:
    output = result.output
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _json_output(result: SubtaskResult) -> tuple[Any, str | None]:
    if result.output_kind == "json":
        return result.output, None
    try:
        return bounded_json.loads(str(result.output)), None
    except bounded_json.JsonRefused as exc:
        why = str(exc).removeprefix("not valid JSON: ")
        return None, f"output is not JSON ({why}): {_clip(result.output)}"


def _schema_failures(schema: dict[str, Any] | str, value: Any, suite_dir: Path) -> list[str]:
    import jsonschema
    from jsonschema.exceptions import best_match

    if isinstance(schema, str):
        path = suite_dir / schema
        try:
            schema = bounded_json.loads(read_text(path, what=SCHEMA_FILE, limit=MAX_SCHEMA_BYTES))
        except InputRefused as exc:
            return [f"json_schema: cannot read {exc}"]
        except OSError as exc:
            return [f"json_schema: cannot read {path}: {exc.strerror or exc}"]
        except bounded_json.JsonRefused as exc:
            return [f"json_schema: {path}: {exc}"]
    if not isinstance(schema, dict):
        return [f"json_schema: not a JSON object: {_clip(schema)}"]
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = best_match(validator.iter_errors(value))
    return (
        [f"output does not match json_schema at {error.json_path}: {error.message}"]
        if error
        else []
    )


def _file_failures(name: str, want: str | FileExpect, workspace: Path) -> list[str]:
    path = workspace / name
    check = FileExpect(equals=want) if isinstance(want, str) else want
    if not path.exists():  # a FIFO or a device is there: refused by name below, not missing
        return [f"file {name}: missing"] if check.exists else []
    if not check.exists:
        return [f"file {name}: exists, expected it not to"]
    try:
        data = read_bytes(path, what=CHECKED_FILE, limit=MAX_CHECKED_FILE_BYTES)
    except OSError as exc:
        return [f"file {name}: cannot be read: {exc.strerror or exc}"]
    text = data.decode("utf-8", "replace")
    failures = []
    if check.equals is not None and text != check.equals:
        failures.append(f"file {name}: content {_clip(text)}, expected {_clip(check.equals)}")
    if check.contains is not None and check.contains not in text:
        failures.append(f"file {name}: does not contain {_clip(check.contains)}")
    if check.regex is not None and not re.search(check.regex, text, re.MULTILINE):
        failures.append(f"file {name}: does not match /{check.regex}/")
    return failures


def _permission_failures(wanted: list[PermissionExpect], result: SubtaskResult) -> list[str]:
    records = result.meta.permissions or []
    failures = []
    for want in wanted:
        if not any(
            r.decision == want.decision
            and (want.kind is None or r.kind == want.kind)
            and (want.title is None or fnmatch.fnmatchcase(r.title, want.title))
            for r in records
        ):
            what = " ".join(f"{k}={v}" for k, v in want.model_dump().items() if v is not None)
            seen = ", ".join(f"{r.kind}:{r.decision}" for r in records) or "none"
            failures.append(f"no permission decision {what} (decisions: {seen})")
    return failures


def workspace_failures(files: dict[str, str | FileExpect], workspace: Path) -> list[str]:
    """How the files of ``workspace`` miss ``files`` (a case's ``expect.files``). Runs where
    the case ran: on a remote executor's node, before its workspace is removed."""
    failures: list[str] = []
    for name, want in files.items():
        failures += _file_failures(name, want, workspace)
    return failures


def check(
    result: SubtaskResult,
    expect: Expect,
    *,
    file_failures: list[str],
    suite_dir: Path,
    duration: float,
) -> list[str]:
    """Every way ``result`` misses ``expect``; empty when the case passes.
    ``file_failures``: what :func:`workspace_failures` found where the case ran."""
    failures: list[str] = []
    if expect.status is not None and result.status != expect.status:
        why = f" ({result.meta.error_code}: {result.error})" if result.error else ""
        failures.append(f"status {result.status}{why}, expected {expect.status}")
    code = result.meta.error_code.value if result.meta.error_code else None
    if expect.error_code is not None and code != expect.error_code:
        failures.append(f"error_code {code}, expected {expect.error_code}")
    text = _output_text(result)
    if expect.output is not None and text.strip() != expect.output.strip():
        failures.append(f"output {_clip(text)}, expected {_clip(expect.output)}")
    failures += [
        f"output does not contain {_clip(part)}"
        for part in expect.output_contains
        if part not in text
    ]
    if expect.output_regex is not None and not re.search(expect.output_regex, text, re.M):
        failures.append(f"output does not match /{expect.output_regex}/: {_clip(text)}")
    if expect.has_json or expect.json_schema is not None:
        value, problem = _json_output(result)
        if problem:
            failures.append(problem)
        else:
            if expect.has_json and value != expect.json_equals:
                failures.append(f"JSON output {_clip(value)}, expected {_clip(expect.json_equals)}")
            if expect.json_schema is not None:
                failures += _schema_failures(expect.json_schema, value, suite_dir)
    if expect.envelope is not None:
        mismatch = subset_mismatch(expect.envelope, result.to_dict())
        if mismatch:
            failures.append(mismatch)
    failures += file_failures
    failures += _permission_failures(expect.permissions, result)
    if expect.max_duration is not None and duration > expect.max_duration:
        failures.append(f"took {duration:.2f}s, more than max_duration {expect.max_duration:g}s")
    return failures
