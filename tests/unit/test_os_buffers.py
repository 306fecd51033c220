"""HeadTail: bounded capture that keeps both ends of a stream."""

from __future__ import annotations

import pytest

from acp_bridge._os.buffers import HeadTail


def test_short_output_is_kept_whole() -> None:
    buf = HeadTail(100)
    for chunk in (b"one\n", b"two\n", b"three\n"):
        buf.feed(chunk)
    assert buf.text() == "one\ntwo\nthree\n"
    assert not buf.truncated and buf.total == 14


def test_long_output_keeps_head_and_tail_with_a_marker() -> None:
    buf = HeadTail(10)
    buf.feed(b"head\n" + b"x" * 1000 + b"tail\n")
    assert buf.truncated
    assert buf.text() == "head\n[... 1000 bytes omitted ...]\ntail\n"


def test_marker_starts_on_its_own_line() -> None:
    buf = HeadTail(4)
    buf.feed(b"abcdefgh")
    assert buf.text() == "ab\n[... 4 bytes omitted ...]\ngh"


def test_memory_stays_bounded_for_many_chunks() -> None:
    buf = HeadTail(64)
    for i in range(10_000):
        buf.feed(f"line {i}\n".encode())
    text = buf.text()
    assert text.startswith("line 0\n") and text.endswith("line 9999\n")
    assert len(buf._tail) <= 2 * 32  # the trimmed tail never grows past twice its share


def test_cut_never_splits_a_utf8_character() -> None:
    buf = HeadTail(8)
    buf.feed("ééééé".encode() + b"-" * 50 + "ünï".encode())
    text = buf.text()
    assert "\ufffd" not in text
    head, tail = text.split("\n[...")[0], text.rsplit("\n", 1)[1]
    assert head == "éé" and tail.endswith("ï")


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    buf = HeadTail(100)
    buf.feed(b"\xff\xfeok")
    assert buf.text().endswith("ok")


def test_limit_must_hold_something() -> None:
    with pytest.raises(ValueError):
        HeadTail(1)
