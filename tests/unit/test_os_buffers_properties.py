"""Property-based tests of the bounded buffers: whatever the stream and however it is cut
into chunks, the kept text is exactly what the rules promise."""

from __future__ import annotations

import itertools
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge._os.buffers import MARKER, HeadTail, TailBuffer, char_start, complete_end

# Text with 1-, 2-, 3- and 4-byte characters, and raw bytes that are not UTF-8 at all.
TEXT = st.text(alphabet=st.sampled_from("ab\néü€😀"), max_size=300)
RAW = st.binary(max_size=300)
_MARKER_LINE = re.compile(re.escape(MARKER).replace(r"\{count\}", r"(?P<count>\d+)") + "\n")


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


def expected_tail(stream: bytes, limit: int) -> bytes:
    if len(stream) <= limit:
        return stream
    tail = stream[-limit:]
    return tail[char_start(tail) :]


@settings(max_examples=150)
@given(TEXT, st.integers(1, 120), st.lists(st.integers(0, 400), max_size=12))
def test_tail_buffer_keeps_exactly_the_last_whole_characters(
    text: str, limit: int, cuts: list[int]
) -> None:
    stream = text.encode()
    tail = TailBuffer(limit)
    for chunk in chunked(stream, cuts):
        tail.append(chunk)
    kept = tail.text(complete=True).encode()
    assert kept == expected_tail(stream, limit)
    assert len(kept) <= limit
    assert tail.truncated == (len(stream) > limit)
    assert tail.total == len(stream)


@given(TEXT, st.integers(1, 120), st.integers(0, 1200))
def test_an_incomplete_stream_never_shows_half_a_character(text: str, limit: int, cut: int) -> None:
    stream = text.encode()
    tail = TailBuffer(limit)
    tail.append(stream[: cut % (len(stream) + 1)])  # cut anywhere, still being written
    assert "\ufffd" not in tail.text()


@given(RAW, st.integers(1, 64))
def test_bytes_that_are_not_utf8_are_replaced_not_dropped(raw: bytes, limit: int) -> None:
    tail = TailBuffer(limit)
    tail.append(raw)
    kept = raw[-limit:]
    text = tail.text(complete=True)
    # Never longer than what was kept, and every kept ASCII byte is still there, in order.
    ascii_kept = bytes(b for b in kept if b < 0x80).decode()
    assert [c for c in text if c.isascii()] == list(ascii_kept)


@settings(max_examples=150)
@given(TEXT, st.integers(2, 120), st.lists(st.integers(0, 400), max_size=12))
def test_head_tail_keeps_both_ends_and_counts_the_cut(
    text: str, limit: int, cuts: list[int]
) -> None:
    stream = text.encode()
    buffer = HeadTail(limit)
    for chunk in chunked(stream, cuts):
        buffer.feed(chunk)
    shown = buffer.text()
    assert buffer.total == len(stream)
    if len(stream) <= limit:
        assert not buffer.truncated and shown == text
        return
    assert buffer.truncated
    match = _MARKER_LINE.search(shown)
    assert match is not None
    before, after = shown[: match.start()].encode(), shown[match.end() :].encode()
    # A newline is put before the marker when the head does not end with one; the count
    # says which reading is right.
    omitted = int(match["count"])
    heads = [h for h in (before, before[:-1]) if len(stream) - len(h) - len(after) == omitted]
    assert heads, (before, after, omitted)
    head = heads[0]
    assert stream.startswith(head) and stream.endswith(after)
    assert len(head) + len(after) <= limit


@given(st.binary(max_size=12))
def test_utf8_boundaries_are_boundaries(data: bytes) -> None:
    start, end = char_start(data), complete_end(data)
    assert 0 <= start <= 3 and 0 <= end <= len(data)
    assert len(data) - end <= 3
