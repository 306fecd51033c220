"""The output_schema checker is a parser of hostile input (issue 19, class 4), through the real
agent process: whatever the answer and the registered schema hold — a remote or unregistered
``$ref``, a pattern that backtracks without end, nesting, huge numbers, references to itself,
quadratic keywords — the run ends ``output_schema`` (never ``internal_error``), by its
deadline, and nothing is fetched."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acp_bridge.errors import ErrorCode
from tests.spy import Spy

# Seconds each (timeouts waited out, hostile cases): out of the default run, in CI's.
pytestmark = pytest.mark.slow

LABEL = "hostile.v1"
DEEP = "[" * 100 + "]" * 100
VERY_DEEP = "[" * 100_000 + "]" * 100_000
BACKTRACK = "a" * 40 + "!"
MANY_OBJECTS = json.dumps([{"i": i % 7, "k": [i]} for i in range(60_000)])

# name: (schema, answer text, words of the expected error)
UNREGISTERED = "no registered schema"
SLOW = "did not finish"
PATTERN = {"type": "string", "pattern": "^(a+)+$"}
SHAPES: dict[str, tuple[Any, str, str]] = {
    "remote $ref": ({"$ref": "https://example.invalid/s.json"}, "1", UNREGISTERED),
    "file $ref outside the registry": ({"$ref": "file:///etc/hostname"}, "1", UNREGISTERED),
    "relative $ref to an unregistered sibling": ({"$ref": "unregistered.json"}, "1", UNREGISTERED),
    "catastrophic pattern": (PATTERN, json.dumps(BACKTRACK), SLOW),
    "catastrophic patternProperties": (
        {"type": "object", "patternProperties": {"^(a|aa)+$": {"type": "string"}}},
        json.dumps({BACKTRACK: 1}),
        "did not finish",
    ),
    "quadratic uniqueItems": ({"type": "array", "uniqueItems": True}, MANY_OBJECTS, SLOW),
    "100 levels of nesting": ({}, DEEP, "nests deeper"),
    "100 000 levels of nesting": ({}, VERY_DEEP, "nests deeper"),
    "an integer of 5000 digits": ({"type": "integer"}, "1" + "0" * 5000, "digits"),
    "NaN": ({"type": "number"}, "NaN", "not JSON"),
    "-Infinity": ({"type": "number"}, "[-Infinity]", "not JSON"),
    "1e400": ({"type": "number"}, "1e400", "overflows"),
    "$ref to itself": ({"$ref": "#"}, "1", "refers to itself"),
    "two definitions that refer to each other": (
        {"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
         "$ref": "#/definitions/a"},
        "1",
        "refers to itself",
    ),
    "multipleOf against a huge float": ({"multipleOf": 0.01}, "1e308", "multiple"),
}  # fmt: skip


def run_with_schema(spy: Spy, schema: Any, answer: str, **profile: Any) -> Any:
    folder = spy.harness.root / "schemas"
    folder.mkdir(exist_ok=True)
    (folder / "unregistered.json").write_text(json.dumps({"type": "string"}))
    path = folder / "hostile.json"
    path.write_text(json.dumps(schema))
    config = spy.config(
        {"answer": answer},
        settings={"schemas": {LABEL: str(path), "sibling.v1": str(folder / "sibling.json")}},
        repair_turns=0,
        **profile,
    )
    return spy.harness.run("spy", "go", config, output_schema=LABEL)


@pytest.fixture(autouse=True)
def sibling(spy: Spy) -> None:
    folder = spy.harness.root / "schemas"
    folder.mkdir(exist_ok=True)
    (folder / "sibling.json").write_text(json.dumps({"type": "integer", "minimum": 1}))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_hostile_answers_and_schemas_are_output_schema_errors(spy: Spy, shape: str) -> None:
    schema, answer, words = SHAPES[shape]
    result = run_with_schema(spy, schema, answer, timeouts={"run": 3})
    assert result.meta.error_code == ErrorCode.OUTPUT_SCHEMA, result.error
    assert words in result.error, result.error
    assert (result.meta.duration_ms or 0) < 3_000 + 5_000  # by T + 5 s


def test_a_ref_to_a_registered_sibling_resolves(spy: Spy) -> None:
    sibling = (spy.harness.root / "schemas" / "sibling.json").resolve().as_uri()
    good = run_with_schema(spy, {"$ref": "sibling.json"}, "3")
    assert (good.status, good.output) == ("done", 3), good.error
    bad = run_with_schema(spy, {"$ref": sibling}, "0")
    assert bad.meta.error_code == ErrorCode.OUTPUT_SCHEMA and "minimum" in bad.error
