"""JSON from outside, nesting bounded: any depth past the bound is a JsonRefused (a
ValueError) that says so — never a RecursionError, whatever the depth — and the decoder's
own errors keep their line and column."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_bridge._os.bounded_json import MAX_DEPTH, JsonRefused, loads, too_deep


def nested(depth: int, opener: str = "[") -> str:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "[":
        return "[" * depth + "]" * depth
    return '{"a":' * (depth - 1) + "{}" + closer * (depth - 1)


@pytest.mark.parametrize("depth", [1, 2, MAX_DEPTH - 1, MAX_DEPTH])
@pytest.mark.parametrize("opener", ["[", "{"])
def test_up_to_the_bound_is_read(depth: int, opener: str) -> None:
    value = loads(nested(depth, opener))
    assert not too_deep(value) and too_deep(value, depth - 1)


@pytest.mark.parametrize(
    "depth", [MAX_DEPTH + 1, 500, 900, 1000, 5000, 100_000], ids=lambda d: f"{d} deep"
)
@pytest.mark.parametrize("opener", ["[", "{"])
def test_deeper_is_refused_in_words_never_a_recursion_error(depth: int, opener: str) -> None:
    with pytest.raises(JsonRefused, match=f"nested deeper than {MAX_DEPTH} levels"):
        loads(nested(depth, opener))


def test_the_bound_is_the_callers() -> None:
    assert loads(nested(100), limit=128) is not None
    with pytest.raises(JsonRefused, match="nested deeper than 8 levels"):
        loads(nested(9), limit=8)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [("{nope", 1, 2), ('{"a": 1,\n  "b": }', 2, 8), ("", 1, 1), ("[1] [2]", 1, 5)],
)
def test_not_json_says_where(text: str, line: int, column: int) -> None:
    with pytest.raises(JsonRefused, match="not valid JSON: ") as caught:
        loads(text)
    assert (caught.value.line, caught.value.column) == (line, column)


def test_bytes_that_are_not_utf8_are_refused_in_words() -> None:
    with pytest.raises(JsonRefused, match="not UTF-8"):
        loads(b'{"a": "\xff"}')


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c"])
def test_line_separators_inside_a_string_are_json(separator: str) -> None:
    text = json.dumps({"task": f"a{separator}b"}, ensure_ascii=False)
    assert loads(text) == {"task": f"a{separator}b"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=20,
)


@given(json_values)
def test_any_shallow_value_reads_back_as_json_reads_it(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assert loads(text) == json.loads(text)
