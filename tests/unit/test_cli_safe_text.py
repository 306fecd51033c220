"""The terminal sanitizer and the JSON rule (cli/_safe_text.py), over every character and
generated text: nothing a terminal obeys gets through, and nothing else is changed."""

from __future__ import annotations

import json
import re
import sys
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_bridge.cli._safe_text import (
    compact_json_text,
    control_pattern,
    json_text,
    one_line,
    visible,
)
from tests.helpers import terminal_controls

# Any code point, lone surrogates included (they reach us from a broken agent or a command
# line; hypothesis's characters() never draws them).
ANY_CHAR = st.characters(codec=None, exclude_categories=()) | st.integers(0xD800, 0xDFFF).map(chr)
TEXT = st.text(ANY_CHAR, max_size=200)
HOSTILE = st.text(
    st.one_of(
        st.sampled_from(["\x1b", "\x9b", "\x07", "\r", "\n", "\t", "\u202e", "\U000e0041"]),
        st.sampled_from("abc é✓😀\\[];"),
        ANY_CHAR,
    ),
    max_size=200,
)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
JSON_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | FINITE | TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)


def test_the_table_covers_every_control_and_format_character_of_this_python() -> None:
    """Every code point of category Cc, Cf, Cs, Zl or Zp (but newline, tab, ZWNJ, ZWJ) is
    matched, and nothing printable is (checked over all of Unicode, not a sample). Every
    character matched is one ``str.isprintable`` refuses: the sanitizer's fast path for text
    without one rests on that."""
    missed, extra, printable = [], [], []
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        unsafe = bool(terminal_controls(char))
        matched = control_pattern().fullmatch(char) is not None
        if unsafe and not matched:
            missed.append(f"U+{point:04X}")
        elif matched and not unsafe and unicodedata.category(char) != "Cn":
            extra.append(f"U+{point:04X}")  # only newer Unicode's (unassigned here) may be
        if matched and char.isprintable():
            printable.append(f"U+{point:04X}")
    assert not missed, missed
    assert not extra, extra
    assert not printable, printable


@given(HOSTILE)
@example("\r")  # a bare CR (found by CI), beside the CRLF that shows as a newline
@example("a\r\nb\rc")
@example("\\r")  # a backslash and an r: text that reads like an escape (found by hypothesis)
@example("\\\x1br")  # a backslash, ESC, r: shown as a backslash, then \x1b, then r (hypothesis)
@settings(max_examples=500)
def test_visible_leaves_no_control_and_changes_nothing_else(text: str) -> None:
    shown = visible(text)
    assert not terminal_controls(shown)
    # Only the controls changed: removing every escape of the output and every control of
    # the input leaves the same text.
    plain = text.replace("\r\n", "\n")  # a CRLF shows as a newline; a bare CR is escaped
    kept = "".join(c for c in plain if not control_pattern().fullmatch(c) and c != "\r")
    # Both sides: the input may spell an escape itself (a backslash, then an r), or make one
    # with the escape shown for a control after its backslash.
    assert _strip_escapes(shown) == _strip_escapes(kept)
    assert shown.count("\n") == plain.count("\n")


@given(HOSTILE)
@settings(max_examples=300)
def test_one_line_stays_on_its_line(text: str) -> None:
    shown = one_line(text)
    assert "\n" not in shown and not terminal_controls(shown)


_ESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|r|n)")


def _strip_escapes(text: str) -> str:
    """``text`` without escapes, to a fixed point: removing one can join a backslash before
    it to the letter after it (``\\`` ESC ``r`` shows as a backslash, ``\\x1b``, ``r``)."""
    while (stripped := _ESCAPE.sub("", text)) != text:
        text = stripped
    return text


def test_each_shape_is_shown_as_repr_writes_it() -> None:
    shapes = {
        "\x1b]52;c;aGk=\x07": "\\x1b]52;c;aGk=\\x07",  # OSC 52: a clipboard write
        "\x1b]0;title\x07": "\\x1b]0;title\\x07",  # the window's title
        "\x1b[2J\x1b[H": "\\x1b[2J\\x1b[H",  # clear the screen
        "\x9b2J": "\\x9b2J",  # the same, as one C1 control
        "\x9d0;t\x9c": "\\x9d0;t\\x9c",  # OSC and ST as C1 controls
        "a\u202eb": "a\\u202eb",  # right-to-left override
        "\u2066x\u2069": "\\u2066x\\u2069",  # bidi isolates
        "ok\rEVIL": "ok\\rEVIL",  # a carriage return that would overwrite the line
        "ab\x08\x08": "ab\\x08\\x08",  # backspaces
        "\x00\x7f": "\\x00\\x7f",  # NUL, DEL
        "\x1bP+q\x1b\\": "\\x1bP+q\\x1b\\",  # a device control string
        "\u200bx\U000e0041": "\\u200bx\\U000e0041",  # zero width, an invisible tag letter
        "\x85\u2028\u2029": "\\x85\\u2028\\u2029",  # NEL, line and paragraph separators
        "line\r\nnext\tcol": "line\nnext\tcol",  # a CRLF is a newline; tabs stay
        "é ✓ 😀 👩\u200d💻": "é ✓ 😀 👩\u200d💻",  # text, emoji and ZWJ sequences stay
    }
    for raw, shown in shapes.items():
        assert visible(raw) == shown, raw
    assert one_line("a\nb") == "a\\nb"


@given(JSON_DATA, st.booleans(), st.booleans())
# 100 trees of up to 20 leaves each: 300 made this the costliest test of tests/unit
@settings(max_examples=100)
def test_json_text_is_the_same_data_with_no_control_raw(
    data: object, pretty: bool, ascii_only: bool
) -> None:
    text = json_text(data, indent=2 if pretty else None, ascii_only=ascii_only)
    # The same data as the standard JSON of it (which, like any JSON, reads an escaped
    # surrogate pair back as the one character it encodes).
    assert json.loads(text) == json.loads(json.dumps(data))
    assert not terminal_controls(text.replace("\n", ""))
    assert "\n" not in text or pretty
    if ascii_only:
        assert text.isascii()


def test_json_text_escapes_what_json_leaves_raw() -> None:
    text = json_text({"k": "\x7f\x9b\u202e\U000e0041é"})
    assert text == '{"k": "\\u007f\\u009b\\u202e\\udb40\\udc41é"}'


@given(JSON_DATA, st.booleans())
# 100 trees of up to 20 leaves each: 300 made this the costliest test of tests/unit
@settings(max_examples=100)
def test_compact_json_text_is_the_same_data_as_json_text(data: object, ascii_only: bool) -> None:
    """``ps --json``'s fast encoder (orjson, the standard library for what it refuses: lone
    surrogates, integers past 64 bits, a stream that is not UTF-8) writes what json_text
    writes, without the spaces."""
    text = compact_json_text(data, ascii_only=ascii_only)
    assert json.loads(text) == json.loads(json_text(data))
    assert not terminal_controls(text)
    assert "\n" not in text
    if ascii_only:
        assert text.isascii()


def test_compact_json_text_escapes_what_json_leaves_raw() -> None:
    assert compact_json_text({"k": "\x7f\x9b\u202e\U000e0041é", "n": [1, 2**70, 0.1, None]}) == (
        '{"k":"\\u007f\\u009b\\u202e\\udb40\\udc41é","n":[1,1180591620717411303424,0.1,null]}'
    )
    rows = [{"task_id": "sub_1", "usage": {"tokens": 5, "cost": 0.25}, "detached": True}]
    assert compact_json_text(rows) == json.dumps(rows, separators=(",", ":"))
