"""The CLI's stderr channel and typed text (cli/_streams.py), on real pipes."""

from __future__ import annotations

import os
import threading
import time

from acp_bridge.cli._streams import StderrChannel, typed_text


def test_a_pipe_nobody_reads_never_blocks_a_write_and_drops_whole_writes() -> None:
    read_end, write_end = os.pipe()
    channel = StderrChannel(write_end, backlog=256 << 10)
    line = b"x" * 999 + b"\n"
    started = time.monotonic()
    for _ in range(2000):  # 2 MB into a 64 KiB pipe and a 256 KiB backlog
        channel.write(line)
    assert time.monotonic() - started < 5  # would block for ever on a blocking write
    assert channel.dropped > 0 and channel.dropped % len(line) == 0  # whole lines only

    got = bytearray()
    reader = threading.Thread(target=lambda: _read_all(read_end, got))
    reader.start()
    channel.drain(patience=5)
    os.close(write_end)
    reader.join(10)
    os.close(read_end)
    body, _, note = bytes(got).rpartition(b"\n[acp-bridge: ")
    assert body and set(body.split(b"\n")[:-1]) == {b"x" * 999}  # no line cut in two
    assert note.startswith(b"%d bytes of stderr dropped" % (2000 * len(line) - len(body)))


def _read_all(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 65536):
        into += chunk


def test_a_reader_that_went_away_is_no_error() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    channel = StderrChannel(write_end)
    channel.write(b"nobody\n")
    channel.drain()
    os.close(write_end)


def test_typed_text_reads_utf8_bytes_that_an_ascii_locale_decoded() -> None:
    typed = "héllo ✓ 😀".encode()
    as_ascii_locale = typed.decode("ascii", "surrogateescape")  # how Python got argv
    assert typed_text(as_ascii_locale) == "héllo ✓ 😀"
    latin = "héllo".encode("latin-1").decode("utf-8", "surrogateescape")  # not UTF-8
    assert typed_text(latin) == latin  # left for the entry wrapper to refuse, clearly
    assert typed_text("plain") == "plain"
