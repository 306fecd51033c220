"""The terminal ring buffer: the exact last bytes, cut on character boundaries."""

from __future__ import annotations

import random

import pytest

from acp_bridge._acp.services.terminals import shell_argv
from acp_bridge._os import buffers
from acp_bridge._os.buffers import TailBuffer

SAMPLE = "aé€😀"  # 1, 2, 3 and 4 bytes in UTF-8


def expected_tail(stream: bytes, limit: int) -> bytes:
    """What the spec asks for: the last ``limit`` bytes, minus a character cut at the front."""
    tail = stream[-limit:] if len(stream) > limit else stream
    if len(stream) > limit:
        while tail and tail[0] & 0xC0 == 0x80:
            tail = tail[1:]
    return tail


def test_short_output_is_kept_whole() -> None:
    tail = TailBuffer(100)
    tail.append("héllo\n".encode())
    assert tail.text() == "héllo\n" and not tail.truncated


@pytest.mark.parametrize("limit", range(1, 12))
def test_cut_at_the_front_lands_on_a_character_boundary(limit: int) -> None:
    stream = (SAMPLE * 3).encode()
    tail = TailBuffer(limit)
    for byte in stream:  # one byte at a time: the worst chunking
        tail.append(bytes([byte]))
    text = tail.text(complete=True)
    assert tail.truncated
    assert text.encode() == expected_tail(stream, limit)
    assert len(text.encode()) <= limit


def test_a_character_still_being_written_is_left_for_later() -> None:
    tail = TailBuffer(100)
    euro = "€".encode()
    tail.append(b"price: " + euro[:2])
    assert tail.text() == "price: "  # not "price: \ufffd"
    tail.append(euro[2:])
    assert tail.text() == "price: €"


def test_an_unfinished_character_at_the_very_end_is_replaced_once_complete() -> None:
    tail = TailBuffer(100)
    tail.append(b"cut " + "😀".encode()[:3])
    assert tail.text() == "cut "
    assert tail.text(complete=True) == "cut \ufffd"


def test_invalid_bytes_are_replaced_not_dropped() -> None:
    tail = TailBuffer(100)
    tail.append(b"a\xffb\xc3(c")
    assert tail.text(complete=True) == "a\ufffdb\ufffd(c"


def test_a_chunk_larger_than_the_limit() -> None:
    tail = TailBuffer(5)
    tail.append(b"0123456789")
    assert tail.truncated and tail.text() == "56789"
    tail = TailBuffer(10)
    tail.append(b"0123456789")  # exactly the limit: nothing was cut
    assert not tail.truncated and tail.text() == "0123456789"


@pytest.mark.parametrize("small", [16, 1 << 16])
def test_random_streams_keep_the_exact_last_bytes(
    small: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(buffers, "SMALL_OUTPUT", small)  # 16: every path of the ring
    rng = random.Random(4)
    for _ in range(300):
        stream = "".join(rng.choice(SAMPLE + "\n") for _ in range(rng.randint(0, 400))).encode()
        limit = rng.randint(1, 120)
        tail = TailBuffer(limit)
        position = 0
        while position < len(stream):
            size = rng.randint(1, 50)
            tail.append(stream[position : position + size])
            position += size
        assert tail.text(complete=True).encode() == expected_tail(stream, limit)
        assert tail.truncated == (len(stream) > limit)
        # Mid-stream reads never show a broken character either.
        assert "\ufffd" not in tail.text()


def test_shell_lines_go_through_sh() -> None:
    assert shell_argv("ls", []) == ["ls"]
    assert shell_argv("/usr/bin/env", ["A=1", "x"]) == ["/usr/bin/env", "A=1", "x"]
    assert shell_argv("ls -la | wc -l", []) == ["/bin/sh", "-c", "ls -la | wc -l"]
    assert shell_argv("echo $HOME", []) == ["/bin/sh", "-c", "echo $HOME"]
